import Foundation
import VoiceEngine
import VoiceSIP

/// Where the service is and how the client talks to it.
public struct VoiceClientConfiguration: Sendable {
    /// How the client reaches the service: encrypted unless the app asks otherwise by name.
    public enum Transport: Sendable, Equatable {
        /// SIP over TLS to the registrar and HTTPS to the registration service. The service's certificate must
        /// chain to `trustRoots` and name `serverName` (the service host when nil), or the IP address connected
        /// to (NIOSSL accepts a certificate's IP address for any name); otherwise nothing is sent and the client
        /// reports ``VoiceClientError/tlsRefused(_:)``.
        case tls(trustRoots: TrustRoots, serverName: String? = nil)
        /// SIP over UDP and plain HTTP: the SIP password the registration service grants and the calls' SRTP keys
        /// cross the network in clear text, readable by anyone on the path. Only for a service on loopback or a
        /// test network.
        case insecurePlaintextUDPAndHTTP

        /// The certificate authorities the service's certificate must chain to: the system's store, a PEM file,
        /// or PEM text.
        public typealias TrustRoots = SIPTLSConfiguration.TrustRoots

        /// SIP port when none is configured: 5061 for TLS, 5060 for plain SIP.
        public var defaultSIPPort: Int { self == .insecurePlaintextUDPAndHTTP ? 5060 : 5061 }
        /// Registration service port when none is configured: 8443 for HTTPS, 8080 for HTTP.
        public var defaultRegistrationPort: Int { self == .insecurePlaintextUDPAndHTTP ? 8080 : 8443 }
    }

    /// The application key the app was given; the secret stays on the app's server.
    public var applicationKey: String
    /// The service host (Kamailio and the registration service), e.g. `127.0.0.1`.
    public var serviceHost: String
    /// Further service nodes (hosts with the same ports), tried in order after ``serviceHost`` when a node does not
    /// answer: at `start()`, and when the connection to the node the client is on fails and registering on it
    /// again fails too.
    public var additionalServiceHosts: [String]
    /// The wait after a failed round of attempts to register again (every host tried once), doubled after each
    /// further failed round up to ``reconnectBackoffCap``, with half of it random (so that the clients of a
    /// restarted service do not all come back at once). The first attempt after a loss goes out at once.
    public var reconnectBackoffBase: Duration
    public var reconnectBackoffCap: Duration
    /// How often the client looks at its interfaces and its route to the service (nil: never). When the address
    /// its connection uses is gone or the kernel would now use another one, it reports
    /// ``VoiceClientEvent/networkChanged(localAddress:)``, registers again from the new address and moves the
    /// running calls there (an ICE restart in a re-INVITE).
    public var networkCheckInterval: Duration?
    /// A call whose media address left the host is *reconnecting*; it ends with cause *network* when neither the
    /// address comes back nor the call moved to a new one within this long (under the media timeout, which would
    /// end it as *timeout*).
    public var networkLossTimeout: Duration
    /// SIP over TLS with the system's trust store unless set.
    public var transport: Transport
    public var sipPort: Int
    public var registrationPort: Int
    /// The lifetime asked for the SIP binding; it is refreshed at 90 %.
    public var registrationExpires: UInt32
    /// How often the client sends a CRLF keepalive on its connection to the service (RFC 5626 §4.4.1) when the
    /// registrar names no `Flow-Timer`; NATs and the service then keep the connection that incoming calls use.
    public var keepaliveInterval: Duration
    /// Push data (at most 1024 bytes) kept with this device's registration: a ``ManagedPushToken``'s
    /// `pushData` when the service pushes, anything the app's push server reads when the app pushes.
    public var pushData: Data?
    /// This device among the user's devices (each keeps its own push data at the service). Nil: an ID made once
    /// and kept in the state store (a new one per process without a store).
    public var deviceID: String? = nil
    /// The name the user's pushes show to the people they call and message (at most 64 bytes).
    public var pushDisplayName: String? = nil
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
    /// Whether each ended call's statistics (``CallStatisticsRecord``) go to the registration service, as the
    /// SDKs upload them for call-quality monitoring; kept in ``stateStore`` until the service has them.
    public var uploadsCallStatistics = true

    /// Ports left nil are the transport's defaults (``Transport/defaultSIPPort``,
    /// ``Transport/defaultRegistrationPort``).
    public init(
        applicationKey: String, serviceHost: String, transport: Transport = .tls(trustRoots: .system),
        sipPort: Int? = nil, registrationPort: Int? = nil, registrationExpires: UInt32 = 600,
        keepaliveInterval: Duration = .seconds(90), pushData: Data? = nil, sipT1: Duration = .milliseconds(500),
        retryCheckInterval: Duration = .seconds(1), audio: CallAudioDevices = CallAudioDevices(),
        noAnswerTimeout: MediaTime = CallStateMachine.defaultNoAnswerTimeout,
        interruptionTimeout: MediaTime = AudioSessionConfiguration().interruptionTimeout,
        health: CallHealthConfiguration = CallHealthConfiguration(), stateStore: (any ClientStateStore)? = nil,
        additionalServiceHosts: [String] = [], reconnectBackoffBase: Duration = .milliseconds(500),
        reconnectBackoffCap: Duration = .seconds(30), networkCheckInterval: Duration? = .seconds(1),
        networkLossTimeout: Duration = .seconds(15)
    ) {
        self.networkLossTimeout = networkLossTimeout
        self.networkCheckInterval = networkCheckInterval
        self.additionalServiceHosts = additionalServiceHosts
        self.reconnectBackoffBase = reconnectBackoffBase
        self.reconnectBackoffCap = reconnectBackoffCap
        self.stateStore = stateStore
        self.interruptionTimeout = interruptionTimeout
        self.health = health
        self.audio = audio
        self.noAnswerTimeout = noAnswerTimeout
        self.applicationKey = applicationKey
        self.serviceHost = serviceHost
        self.transport = transport
        self.sipPort = sipPort ?? transport.defaultSIPPort
        self.registrationPort = registrationPort ?? transport.defaultRegistrationPort
        self.registrationExpires = registrationExpires
        self.keepaliveInterval = keepaliveInterval
        self.pushData = pushData
        self.sipT1 = sipT1
        self.retryCheckInterval = retryCheckInterval
    }
}
