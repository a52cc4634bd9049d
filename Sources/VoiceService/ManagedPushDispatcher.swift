import Foundation
import VoiceClientWire
import VoicePush

/// Managed push: the service pushes a call or message payload to every device of the callee that registered a
/// ``ManagedPushToken`` (APNs VoIP or FCM), each through its push service, and removes the push data of a device
/// whose push service says its token is gone. Devices with app-sent push data (anything else) are skipped.
public actor ManagedPushDispatcher {
    /// What became of the push to one device.
    public struct DeviceOutcome: Sendable, Equatable {
        public var deviceID: String
        public var outcome: PushOutcome
        /// The device's push data was removed from the store (its token is gone).
        public var removed: Bool
    }

    private let store: RegistrationStore
    private let apns: APNsSender?
    private let fcm: FCMSender?
    /// Pushes by outcome so far ("delivered", "deviceGone", "refused", "notSent").
    public private(set) var counts: [String: Int] = [:]

    public init(store: RegistrationStore, apns: APNsSender?, fcm: FCMSender?) {
        self.store = store
        self.apns = apns
        self.fcm = fcm
    }

    /// Pushes `payload` (a ``PushPayload``-shaped JSON object) to each device of `userID` with managed push data,
    /// in parallel. The sender's display name (from the sender's own registration) is added when the payload has
    /// none.
    public func push(_ payload: Data, to userID: String) async throws(RegistrationStoreError) -> [DeviceOutcome] {
        let devices = try await store.devices(applicationKey: nil, userID: userID)
        let payload = try await withDisplayName(payload)
        let apns = apns, fcm = fcm
        let outcomes = await withTaskGroup(of: (RegistrationStore.Device, PushOutcome).self) { group in
            for device in devices {
                guard let token = ManagedPushToken(pushData: device.pushData) else { continue }
                group.addTask {
                    switch token {
                    case .apns(let deviceToken):
                        guard let apns else { return (device, .notSent("no APNs sender is configured")) }
                        return (device, await apns.send(payload, toDevice: deviceToken))
                    case .fcm(let registrationToken):
                        guard let fcm else { return (device, .notSent("no FCM sender is configured")) }
                        return (device, await fcm.send(payload, toDevice: registrationToken))
                    }
                }
            }
            var outcomes: [(RegistrationStore.Device, PushOutcome)] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        var results: [DeviceOutcome] = []
        for (device, outcome) in outcomes.sorted(by: { $0.0.deviceID < $1.0.deviceID }) {
            var removed = false
            if case .deviceGone = outcome {
                removed = try await store.removePushData(
                    applicationKey: device.applicationKey, userID: device.userID, deviceID: device.deviceID,
                    ifStill: device.pushData)
            }
            counts[Self.name(outcome), default: 0] += 1
            results.append(DeviceOutcome(deviceID: device.deviceID, outcome: outcome, removed: removed))
        }
        return results
    }

    public func close() async {
        await apns?.close()
        await fcm?.close()
    }

    /// Adds `"n": <display name>` from the sender's (`"f"`) latest registration, when it set one.
    private func withDisplayName(_ payload: Data) async throws(RegistrationStoreError) -> Data {
        guard var object = (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any], object["n"] == nil,
            let sender = object["f"] as? String
        else { return payload }
        guard let name = try await store.displayName(userID: sender) else { return payload }
        object["n"] = name
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? payload
    }

    /// The outcome's kind: "delivered", "deviceGone", "refused" or "notSent".
    static func name(_ outcome: PushOutcome) -> String {
        switch outcome {
        case .delivered: "delivered"
        case .deviceGone: "deviceGone"
        case .refused: "refused"
        case .notSent: "notSent"
        }
    }

    /// The push service's message ID, or why the push did not go.
    static func detail(_ outcome: PushOutcome) -> String {
        switch outcome {
        case .delivered(let id): id
        case .deviceGone(let reason): reason
        case .refused(let status, let reason): "\(status) \(reason)"
        case .notSent(let reason): reason
        }
    }
}
