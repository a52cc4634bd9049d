// swift-tools-version: 6.1
// VoiceEngine benchmarks: a separate package (as swift-nio does), so users of the library never resolve benchmark
// dependencies. See README.md in this folder for the suites and the exact commands.
import PackageDescription

/// SwiftPM names a path dependency after its folder (here the clone's folder, whatever it is called), so the root
/// package's identity is computed rather than written as "VoiceEngine".
let rootPackage: String = {
    let components = Context.packageDirectory.split(separator: "/")
    return components.count >= 2 ? String(components[components.count - 2]) : "VoiceEngine"
}()
let voiceEngine = Target.Dependency.product(name: "VoiceEngine", package: rootPackage)
/// Simulation, scenarios and the jitter benchmark live beside the engine, not in the product a client links.
let voiceLab = Target.Dependency.product(name: "VoiceLab", package: rootPackage)
let voiceSIP = Target.Dependency.product(name: "VoiceSIP", package: rootPackage)
let voiceConference = Target.Dependency.product(name: "VoiceConference", package: rootPackage)
let voiceWebRTC = Target.Dependency.product(name: "VoiceWebRTC", package: rootPackage)

let package = Package(
    name: "VoiceEngineBenchmarks",
    dependencies: [
        .package(path: ".."),
        // The MallocInterposer trait is what gives the malloc counters (mallocCountTotal) on Swift 6.3.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `voice-bench sip --load` runs the engine's UAS on an event loop of its own.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2")
    ],
    targets: [
        // A plain C loop over the same libopus / speexdsp / spandsp calls the Swift wrappers make: the floor `voice-bench`
        // compares against. Includes the system headers directly and links the libraries itself.
        .target(
            name: "CBaseline",
            path: "Sources/CBaseline",
            // libsrtp: the engine's own build (../Sources/CSRTP, linked into voice-bench through VoiceEngine), so
            // both sides of the comparison run the same SRTP code. This package is never a dependency, so the
            // absolute include path (an unsafe flag) is fine here.
            cSettings: [.unsafeFlags(["-I", Context.packageDirectory + "/../Sources/CSRTP/include"])],
            linkerSettings: [.linkedLibrary("opus"), .linkedLibrary("speexdsp"), .linkedLibrary("spandsp")]
        ),
        // Deterministic inputs (speech-like PCM, pre-encoded packets) shared by the suites and voice-bench.
        .target(
            name: "BenchmarkFixtures",
            dependencies: [voiceEngine, voiceLab, voiceConference, voiceWebRTC],
            path: "Sources/BenchmarkFixtures"
        ),
        .executableTarget(
            name: "voice-bench",
            dependencies: [
                "CBaseline",
                "BenchmarkFixtures",
                voiceEngine,
                voiceLab,
                voiceSIP,
                voiceConference,
                voiceWebRTC,
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio")
            ],
            path: "Sources/voice-bench"
        )
    ],
    swiftLanguageModes: [.v6]
)

// The configuration every allocation suite shares.
package.targets.append(
    .target(
        name: "AllocationSuite", dependencies: [.product(name: "Benchmark", package: "benchmark")],
        path: "Sources/AllocationSuite"))

// ordo-one/benchmark suites: sources must live under Benchmarks/<SuiteTarget>/ for the plugin to find them.
for suite in [
    "CodecBenchmarks", "ResamplerBenchmarks", "JitterBenchmarks", "PipelineBenchmarks", "SRTPBenchmarks",
    "ConferenceBenchmarks"
] {
    package.targets.append(
        .executableTarget(
            name: suite,
            dependencies: [
                "AllocationSuite",
                "BenchmarkFixtures",
                voiceEngine,
                voiceLab,
                voiceConference,
                .product(name: "Benchmark", package: "benchmark")
            ],
            path: "Benchmarks/\(suite)",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    )
}

// The WebRTC transport's media path after the ICE/DTLS handshake: 0 mallocs per packet (Thresholds/).
package.targets.append(
    .executableTarget(
        name: "WebRTCBenchmarks",
        dependencies: [
            "AllocationSuite", "BenchmarkFixtures", voiceEngine, voiceWebRTC,
            .product(name: "Benchmark", package: "benchmark")
        ],
        path: "Benchmarks/WebRTCBenchmarks",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
)

// SIP message parsing and serialization: allocations per message (bounded, not zero; Thresholds/).
package.targets.append(
    .executableTarget(
        name: "SIPBenchmarks",
        dependencies: ["BenchmarkFixtures", voiceSIP, .product(name: "Benchmark", package: "benchmark")],
        path: "Benchmarks/SIPBenchmarks",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
)
