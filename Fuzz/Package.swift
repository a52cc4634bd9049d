// swift-tools-version: 6.1
// libFuzzer targets for VoiceEngine's parsers: a separate package (like Benchmarks/), so the root package never
// builds with the fuzzer sanitizer. Build and run with ./run.sh (usage at its top; results in ../RELIABILITY.md).
import PackageDescription

/// SwiftPM names a path dependency after its folder (the clone's folder, whatever it is called), so the root
/// package's identity is computed rather than written as "VoiceEngine" (the trick Benchmarks/Package.swift uses).
let rootPackage: String = {
    let components = Context.packageDirectory.split(separator: "/")
    return components.count >= 2 ? String(components[components.count - 2]) : "VoiceEngine"
}()

/// One executable per parser. Each is a single file defining `LLVMFuzzerTestOneInput` and an `@main` that hands it
/// to libFuzzer's driver (build with `-sanitize=fuzzer,address -parse-as-library`, as run.sh does).
let fuzzTargets =
    ["rtp", "rtcp", "srtp", "sdes", "sdp", "wav", "pcap", "trace", "sip", "stun"]
    + ["client"]  // the calling client's push payloads and service answers

let package = Package(
    name: "VoiceEngineFuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .target(name: "CFuzzerDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzerDriver"])
    ]
        + fuzzTargets.map { name in
            .executableTarget(
                name: "fuzz-\(name)",
                dependencies: ["FuzzSupport", .product(name: "VoiceEngine", package: rootPackage)]
                    // The network trace format and capture reading belong to the lab, which the engine product
                    // does not carry.
                    + (name == "trace" || name == "pcap" ? [.product(name: "VoiceLab", package: rootPackage)] : [])
                    // SIP signalling is a product of its own.
                    + (name == "sip" ? [.product(name: "VoiceSIP", package: rootPackage)] : [])
                    + (name == "client"
                        ? [
                            .product(name: "VoiceClient", package: rootPackage),
                            .product(name: "VoiceSIP", package: rootPackage)
                        ] : [])
                    // STUN/TURN and the WebRTC port's demultiplexing live in the WebRTC transport product.
                    + (name == "stun" ? [.product(name: "VoiceWebRTC", package: rootPackage)] : []),
                path: "targets/\(name)"
            )
        },
    swiftLanguageModes: [.v6]
)
