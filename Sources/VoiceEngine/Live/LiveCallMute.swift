extension LiveCall {
    /// Mutes or unmutes the microphone: while muted the call sends silence (the stream keeps its timing, so the
    /// peer's jitter buffer sees no gap). For a call without an audio session; with one, the session's
    /// `startCapture`/`stopCapture` effects decide.
    public func setMicrophoneMuted(_ muted: Bool) {
        shared.microphoneOpen.store(!muted, ordering: .releasing)
    }
}
