/// Push data: any bytes a device attaches to its registration (the SDKs' app-sent push), handed to callers'
/// clients when the device has no live connection.
public enum PushData {
    public static let maximumBytes = 1024
}
