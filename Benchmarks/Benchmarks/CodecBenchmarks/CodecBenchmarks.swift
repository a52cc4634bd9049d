import AllocationSuite
import Benchmark
import BenchmarkFixtures
import VoiceEngine

// Opus steady state: one 20 ms frame per inner iteration on preallocated buffers. Encoders, decoders and inputs
// are made (and warmed up) when the suite is registered, outside the measured closure. Each sample is 1 000 calls
// (`scalingFactor: .kilo`), so the allocation threshold of 0 (checked at p90 of the raw per-sample counts by
// `benchmark thresholds check`) fails for any allocation that happens even once in 1 000 frames.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration.zeroAllocations(
        warmupIterations: 2, maxDuration: .seconds(2), maxIterations: 50)

    // Encoding costs 0.2-0.6 ms per frame here, so a 1 000-call sample takes up to 0.6 s: give it more time.
    var encodeConfiguration = configuration
    encodeConfiguration.maxDuration = .seconds(5)

    for sampleRate in [16_000, 48_000] {
        let encode = try! OpusEncodeWorkload(sampleRate: sampleRate)
        blackHole(encode.run(encode.frameCount))  // warm-up: one pass over the input
        Benchmark("Opus.encode.20ms.\(sampleRate / 1000)k", configuration: encodeConfiguration) { benchmark in
            blackHole(encode.run(benchmark.scaledIterations.count))
        }

        let decode = try! OpusDecodeWorkload(sampleRate: sampleRate)
        blackHole(decode.run(decode.stream.count))
        Benchmark("Opus.decode.20ms.\(sampleRate / 1000)k", configuration: configuration) { benchmark in
            blackHole(decode.run(benchmark.scaledIterations.count))
        }
    }

    let conceal = try! OpusConcealWorkload(sampleRate: 16_000)
    blackHole(conceal.run(5))
    Benchmark("Opus.conceal.20ms.16k", configuration: configuration) { benchmark in
        blackHole(conceal.run(benchmark.scaledIterations.count))
    }

    // G.711 and G.722 (spandsp): encode, decode and the concealer's history per frame; every other frame lost
    // (decode one, conceal the next).
    for codec in TelephonyCodec.allCases {
        let telephony = TelephonyWorkload(codec: codec)
        blackHole(telephony.run(telephony.frameCount))
        Benchmark("\(codec.encodingName).encode+decode.20ms", configuration: configuration) { benchmark in
            blackHole(telephony.run(benchmark.scaledIterations.count))
        }
        blackHole(telephony.decodeAndConceal(telephony.frameCount))
        Benchmark("\(codec.encodingName).decode+conceal.20ms", configuration: configuration) { benchmark in
            blackHole(telephony.decodeAndConceal(benchmark.scaledIterations.count))
        }
    }

    // In-band DTMF detection on a 16 kHz stream's decoded audio: resampled to 8 kHz and through spandsp's receiver.
    let inBand = try! InBandDTMFWorkload()
    blackHole(inBand.run(inBand.frameCount))
    Benchmark("DTMF.inband.20ms.16k", configuration: configuration) { benchmark in
        blackHole(inBand.run(benchmark.scaledIterations.count))
    }
}
