// swift-tools-version: 6.1
// VoiceEngine — a real-time voice media engine for Linux. ARCHITECTURE.md describes the modules and the data flow.
import PackageDescription

/// A `.systemLibrary` target for one C library found through pkg-config, with the Debian package that provides it.
func cLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let package = Package(
    name: "VoiceEngine",
    products: [
        // What a calling client links: the engine only.
        .library(name: "VoiceEngine", targets: ["VoiceEngine"]),
        // Simulation, demo, test vectors and benchmark support: for the CLI, the tests and Benchmarks/, not for clients.
        .library(name: "VoiceLab", targets: ["VoiceLab"]),
        // SIP signalling (messages, transactions, transports): for clients that place calls through SIP servers.
        .library(name: "VoiceSIP", targets: ["VoiceSIP"]),
        // The calling client an app links (client, registration, messages, call objects): engine + SIP behind it.
        .library(name: "VoiceClient", targets: ["VoiceClient"]),
        // WebRTC-compatible media transport (STUN/ICE, DTLS-SRTP, WebRTC SDP): a product of its own for apps that
        // do WebRTC without the calling client; VoiceClient links it (its calls key SRTP by DTLS-SRTP).
        .library(name: "VoiceWebRTC", targets: ["VoiceWebRTC"]),
        // The conference mixer (rooms, mix-minus, shared encoding, media threads): engine modules only, no SIP.
        .library(name: "VoiceConference", targets: ["VoiceConference"]),
        .executable(name: "voice-engine", targets: ["voice-engine"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-atomics", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // TLS for SIP (`sips:`, `transport=tls`) in VoiceSIP.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // The registration service's store (PostgreSQL), in VoiceService only: clients do not link it.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The push senders (VoicePush): HTTP/2 to APNs and FCM, ES256/RS256 token signing. Service side only.
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // The registration service's `/metrics` (Prometheus text format), in VoiceService only.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation --target VoiceEngine` builds the DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")
    ],
    targets: [
        cLibrary("COpus", pkgConfig: "opus", apt: "libopus-dev"),
        cLibrary("CSpeexDSP", pkgConfig: "speexdsp", apt: "libspeexdsp-dev"),
        // G.711, G.722 and their packet loss concealment (VoiceCodec's telephony codecs).
        cLibrary("CSpanDSP", pkgConfig: "spandsp", apt: "libspandsp-dev"),
        cLibrary("COpenSSL", pkgConfig: "libcrypto", apt: "libssl-dev"),
        // libsrtp 2.5.0 built from source: OpenSSL's AES-CTR/GCM with libsrtp's own HMAC-SHA1, the one build in
        // which srtp_protect/srtp_unprotect never allocate (Debian's NSS build allocates 14 times per packet).
        // Sources/CSRTP/README.md says what was taken from where and why.
        .target(
            name: "CSRTP",
            dependencies: ["COpenSSL"],
            exclude: ["README.md", "vendor/libsrtp/LICENSE"],
            cSettings: [
                .define("HAVE_CONFIG_H"),
                .headerSearchPath("config"),
                .headerSearchPath("vendor/libsrtp/include"),
                .headerSearchPath("vendor/libsrtp/crypto/include")
            ]
        ),
        // The FFT's butterflies (VoiceDSP's `FFT`): C so they vectorise in release and stay fast in debug builds.
        .target(name: "CDSPKernels"),
        cLibrary("CALSA", pkgConfig: "alsa", apt: "libasound2-dev"),
        // libssl (DTLS 1.2 with use_srtp) for VoiceWebRTC (and through it the calling client's DTLS-SRTP calls).
        cLibrary("CDTLS", pkgConfig: "libssl", apt: "libssl-dev"),

        .target(name: "VoiceCore", dependencies: [.product(name: "Atomics", package: "swift-atomics")]),
        .target(name: "VoiceCodec", dependencies: ["VoiceCore", "COpus", "CSpanDSP"]),
        .target(name: "VoiceDSP", dependencies: ["VoiceCore", "CSpeexDSP", "CDSPKernels"]),
        .target(name: "VoiceRTP", dependencies: ["VoiceCore"]),
        .target(name: "VoiceSRTP", dependencies: ["VoiceCore", "VoiceRTP", "CSRTP"]),
        .target(name: "VoiceDevices", dependencies: ["VoiceCore", "CALSA"]),
        .target(name: "VoiceSession", dependencies: ["VoiceCore", "VoiceDSP", "VoiceDevices"]),
        .target(name: "VoiceNetSim", dependencies: ["VoiceCore"]),
        // SDP offer/answer (RFC 3264, 4566, 7587): needs the codec's and SRTP's descriptions, not the engine, so a
        // SIP stack links neither ALSA nor speexdsp.
        .target(name: "VoiceSDP", dependencies: ["VoiceCodec", "VoiceSRTP"]),
        // One HMAC/SHA wrapper over OpenSSL's libcrypto: SIP digest, STUN integrity, registration signatures.
        .target(name: "VoiceCrypto", dependencies: ["COpenSSL"]),
        .target(name: "VoiceJitter", dependencies: ["VoiceCore", "VoiceCodec", "VoiceDSP", "VoiceRTP", "CSpeexDSP"]),
        .target(
            name: "VoiceEngine",
            dependencies: [
                "VoiceCore", "VoiceCodec", "VoiceDSP", "VoiceRTP", "VoiceSRTP", "VoiceSDP", "VoiceDevices",
                "VoiceJitter",
                "VoiceSession", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio")
            ]
        ),
        .target(name: "VoiceLab", dependencies: ["VoiceEngine", "VoiceNetSim", "VoiceConference"]),
        // Conference rooms mixed from the engine's MediaStream parts (ARCHITECTURE.md "Conference mixer").
        .target(
            name: "VoiceConference",
            dependencies: [
                "VoiceCore", "VoiceCodec", "VoiceJitter", "VoiceEngine",
                .product(name: "Atomics", package: "swift-atomics")
            ]
        ),
        .target(
            name: "VoiceSIP",
            // VoiceSDP: calls negotiate through its SessionDescription/AudioCapabilities (offer/answer in SIPCall);
            // the media engine itself is the client's, so VoiceSIP does not link it.
            dependencies: [
                "VoiceCrypto", "VoiceSDP", "VoiceRTP", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        // The registration and push wire types shared by the client and the service (so the service links neither
        // ALSA nor Opus): requests, grants, refusals, push data, the signatures over them.
        .target(name: "VoiceClientWire", dependencies: ["VoiceCrypto"]),
        .target(
            name: "VoiceClient",
            dependencies: [
                "VoiceEngine", "VoiceSIP", "VoiceClientWire", "VoiceWebRTC",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl")
            ]
        ),
        // The push senders that speak APNs (HTTP/2, ES256 provider tokens) and FCM HTTP v1 (OAuth2 service-account
        // grant): linked by the service, never by clients.
        .target(
            name: "VoicePush",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto")
            ]
        ),
        // The service side of the client: the registration service that verifies signed requests and issues the
        // ephemeral credentials Kamailio checks (not linked by clients).
        .target(
            name: "VoiceService",
            dependencies: [
                "VoiceClientWire", "VoiceCrypto", "VoicePush", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus")
            ]
        ),
        .target(
            name: "VoiceWebRTC",
            dependencies: [
                "VoiceEngine", "VoiceCrypto", "CDTLS", .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio")
            ]
        ),
        // The conference server: SIP user agent for room URIs, participants' media legs, rooms' reports.
        .target(
            name: "VoiceConferenceServer",
            dependencies: [
                "VoiceEngine", "VoiceSIP", "VoiceConference", "VoiceWebRTC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio")
            ]
        ),
        .executableTarget(
            name: "voice-engine",
            dependencies: [
                "VoiceEngine", "VoiceLab", "VoiceSIP", "VoiceClient", "VoiceService", "VoicePush", "VoiceWebRTC",
                "VoiceConferenceServer", "VoiceCrypto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")
            ]
        ),

        .target(name: "VoiceTestSupport", dependencies: ["VoiceCore"], path: "Tests/VoiceTestSupport"),
        .testTarget(name: "VoiceCryptoTests", dependencies: ["VoiceCrypto"]),
        .testTarget(name: "VoiceCoreTests", dependencies: ["VoiceCore", "VoiceTestSupport"]),
        .testTarget(name: "VoiceCodecTests", dependencies: ["VoiceCodec", "VoiceTestSupport"]),
        .testTarget(name: "VoiceDSPTests", dependencies: ["VoiceDSP", "VoiceLab", "VoiceTestSupport"]),
        .testTarget(name: "VoiceRTPTests", dependencies: ["VoiceRTP", "VoiceTestSupport"]),
        .testTarget(
            name: "VoiceSRTPTests",
            dependencies: ["VoiceSRTP", "VoiceRTP", "VoiceCodec", "VoiceLab", "VoiceTestSupport"]),
        .testTarget(name: "VoiceDevicesTests", dependencies: ["VoiceDevices", "VoiceTestSupport"]),
        .testTarget(name: "VoiceSessionTests", dependencies: ["VoiceSession", "VoiceTestSupport"]),
        .testTarget(name: "VoiceNetSimTests", dependencies: ["VoiceNetSim", "VoiceTestSupport"]),
        .testTarget(
            name: "VoiceJitterTests", dependencies: ["VoiceJitter", "VoiceNetSim", "VoiceLab", "VoiceTestSupport"]),
        .testTarget(
            name: "VoiceSIPTests",
            dependencies: [
                "VoiceSIP", "VoiceEngine", "VoiceTestSupport", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ],
            exclude: ["Fixtures", "Peers"]
        ),
        .testTarget(
            name: "VoiceClientTests",
            dependencies: [
                "VoiceClient", "VoiceService", "VoiceSIP", "VoiceTestSupport", "VoiceLab", "VoiceWebRTC", "VoicePush",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        .testTarget(
            name: "VoiceWebRTCTests", dependencies: ["VoiceWebRTC", "VoiceTestSupport"], exclude: ["Fixtures"]),
        .testTarget(
            name: "VoiceConferenceServerTests",
            dependencies: [
                "VoiceConferenceServer", "VoiceSIP", "VoiceEngine", "VoiceLab", "VoiceTestSupport", "VoiceWebRTC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio")
            ]
        ),
        .testTarget(name: "VoiceLabTests", dependencies: ["VoiceLab", "VoiceTestSupport"]),
        .testTarget(name: "VoiceEngineTests", dependencies: ["VoiceEngine", "VoiceLab", "VoiceTestSupport"]),
        // The `voice-engine` tool run as a user runs it (a subprocess), beside the library tests it builds on.
        .testTarget(name: "VoiceEngineCLITests", dependencies: ["VoiceEngine", "VoiceLab", "VoiceTestSupport"]),
        .testTarget(
            name: "VoiceConferenceTests",
            dependencies: ["VoiceConference", "VoiceEngine", "VoiceLab", "VoiceNetSim", "VoiceTestSupport"])
    ],
    swiftLanguageModes: [.v6]
)

// CI builds the project's own Swift targets with warnings as errors (`.ci/run` sets VOICEENGINE_WARNINGS_AS_ERRORS=1);
// dependencies keep their warnings, and a local build stays forgiving while code is being written.
if Context.environment["VOICEENGINE_WARNINGS_AS_ERRORS"] == "1" {
    for target in package.targets where target.type != .system && !target.name.hasPrefix("C") {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-warnings-as-errors"])]
    }
}
