import Foundation
import VoiceEngine

/// Where the service is and how the client talks to it.
public struct VoiceClientConfiguration: Sendable {
    /// The application key the app was given; the secret stays on the app's server.
    public var applicationKey: String
    /// The service host (Kamailio and the registration service), e.g. `127.0.0.1`.
    public var serviceHost: String
    public var sipPort: Int
    public var registrationPort: Int
    /// The lifetime asked for the SIP binding; it is refreshed at 90 %.
    public var registrationExpires: UInt32
    /// Push data (at most 1024 bytes) kept with this device's registration.
    public var pushData: Data?
    /// SIP T1, the first retransmission interval (500 ms); T2 and T4 follow it (8 and 10 × T1, at most 4 s and
    /// 5 s). Tests shorten it so a lost request times out in about a second.
    public var sipT1: Duration
    /// How often due messages are retried (and unanswered calls checked for the no-answer timeout) while the
    /// client runs.
    public var retryCheckInterval: Duration
    /// The devices of calls and the ringtone.
    public var audio: CallAudioDevices
    /// Unanswered calls end with *no answer* after this long (the SDKs' 60 s).
    public var noAnswerTimeout: MediaTime
    /// A call whose devices stay interrupted this long ends with *failure* (the audio session's rule; the SDKs'
    /// 30 s).
    public var interruptionTimeout: MediaTime
    /// The media timeout (20 s) and how often a call reports its quality (2 s).
    public var health: CallHealthConfiguration
    /// Where the outbox, the last registration grant and the push data are kept across restarts of the app
    /// (``DirectoryStateStore`` for a directory the app chooses, or a store of the app's own). Nil keeps them in
    /// memory only: unsent messages are lost on exit and every start asks the app to sign.
    public var stateStore: (any ClientStateStore)?

    public init(
        applicationKey: String, serviceHost: String, sipPort: Int = 5060, registrationPort: Int = 8080,
        registrationExpires: UInt32 = 600, pushData: Data? = nil, sipT1: Duration = .milliseconds(500),
        retryCheckInterval: Duration = .seconds(1), audio: CallAudioDevices = CallAudioDevices(),
        noAnswerTimeout: MediaTime = CallStateMachine.defaultNoAnswerTimeout,
        interruptionTimeout: MediaTime = AudioSessionConfiguration().interruptionTimeout,
        health: CallHealthConfiguration = CallHealthConfiguration(), stateStore: (any ClientStateStore)? = nil
    ) {
        self.stateStore = stateStore
        self.interruptionTimeout = interruptionTimeout
        self.health = health
        self.audio = audio
        self.noAnswerTimeout = noAnswerTimeout
        self.applicationKey = applicationKey
        self.serviceHost = serviceHost
        self.sipPort = sipPort
        self.registrationPort = registrationPort
        self.registrationExpires = registrationExpires
        self.pushData = pushData
        self.sipT1 = sipT1
        self.retryCheckInterval = retryCheckInterval
    }
}
