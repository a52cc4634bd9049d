import Foundation
import Synchronization
import Testing
import VoiceCore
import VoiceTestSupport

@Suite struct SampleRingTests {
    @Test func readsBackWhatWasWrittenInOrder() {
        let ring = SampleRing(capacity: 8)
        #expect(ring.write(contentsOf: [1, 2, 3]) == 3)
        #expect(ring.availableToRead == 3)
        #expect(ring.availableToWrite == 5)
        var out = [Int16](repeating: 0, count: 8)
        let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0) }
        #expect(n == 3)
        #expect(Array(out[0..<3]) == [1, 2, 3])
        #expect(ring.availableToRead == 0)
    }

    @Test func wrapsAroundTheEndOfStorageWithoutLosingOrder() {
        let ring = SampleRing(capacity: 7)  // not a power of two on purpose
        var next: Int16 = 0
        var expected: Int16 = 0
        var out = [Int16](repeating: -1, count: 5)
        // Chunks of 5 through a ring of 7 land at every offset, so both copy halves are exercised.
        for _ in 0..<50 {
            let chunk = (0..<5).map { next &+ Int16($0) }
            #expect(ring.write(contentsOf: chunk) == 5)
            next &+= 5
            let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0) }
            #expect(n == 5)
            #expect(out == (0..<5).map { expected &+ Int16($0) })
            expected &+= 5
        }
    }

    @Test func writeIntoFullRingTakesOnlyWhatFitsAndKeepsUnreadData() {
        let ring = SampleRing(capacity: 4)
        #expect(ring.write(contentsOf: [1, 2, 3, 4, 5, 6]) == 4)
        #expect(ring.availableToWrite == 0)
        #expect(ring.write(contentsOf: [9, 9]) == 0)
        var out = [Int16](repeating: 0, count: 2)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0) } == 2)
        #expect(out == [1, 2])
        #expect(ring.write(contentsOf: [7, 8, 9]) == 2)
        out = [Int16](repeating: 0, count: 6)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0) } == 4)
        #expect(Array(out[0..<4]) == [3, 4, 7, 8])
    }

    @Test func readFromEmptyRingReturnsZeroAndLeavesBufferUntouched() {
        let ring = SampleRing(capacity: 4)
        var out: [Int16] = [42, 42]
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0) } == 0)
        #expect(out == [42, 42])
        ring.write(contentsOf: [5])
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0) } == 1)
        #expect(out == [5, 42])
    }

    @Test func emptyBuffersAreNoOps() {
        let ring = SampleRing(capacity: 4)
        #expect(ring.write(contentsOf: []) == 0)
        #expect(ring.read(into: UnsafeMutableBufferPointer(start: nil, count: 0)) == 0)
        #expect(ring.availableToRead == 0)
    }

    @Test func discardAllFlushesUnreadSamplesAndRingStaysUsable() {
        let ring = SampleRing(capacity: 5)
        ring.write(contentsOf: [1, 2, 3, 4])
        #expect(ring.discardAll() == 4)
        #expect(ring.availableToRead == 0)
        #expect(ring.availableToWrite == 5)
        ring.write(contentsOf: [10, 11, 12])
        var out = [Int16](repeating: 0, count: 3)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0) } == 3)
        #expect(out == [10, 11, 12])
    }

    @Test func discardUpToDropsTheOldestSamples() {
        let ring = SampleRing(capacity: 6)
        ring.write(contentsOf: [1, 2, 3, 4])
        #expect(ring.discard(upTo: 3) == 3)
        #expect(ring.discard(upTo: 0) == 0)
        var out = [Int16](repeating: 0, count: 4)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0) } == 1)
        #expect(out[0] == 4)
        #expect(ring.discard(upTo: 10) == 0)
    }

    /// The producer writes 0, 1, 2, … (as Int16) in random-sized chunks; the consumer reads in other random
    /// sizes and checks every sample. Loss, duplication, reordering or a torn copy shows up as a mismatch.
    @Test func carriesTwoMillionSamplesExactlyBetweenTwoThreads() {
        let total = 2_000_000
        let ring = SampleRing(capacity: 1_001)
        runOnTwoThreads(
            total: total,
            producer: { state in
                var rng = SplitMix64(seed: 1)
                var chunk = [Int16](repeating: 0, count: 1_500)
                var sent = 0
                while sent < total, !state.stop.load(ordering: .relaxed) {
                    let n = min(Int.random(in: 1...1_500, using: &rng), total - sent)
                    for i in 0..<n { chunk[i] = Int16(truncatingIfNeeded: sent + i) }
                    var offset = 0
                    while offset < n, !state.stop.load(ordering: .relaxed) {
                        let written = chunk.withUnsafeBufferPointer {
                            ring.write(UnsafeBufferPointer(rebasing: $0[offset..<n]))
                        }
                        if written == 0 { sched_yield() }
                        offset += written
                    }
                    sent += offset
                }
            },
            consumer: { state in
                var rng = SplitMix64(seed: 2)
                var buffer = [Int16](repeating: 0, count: 1_500)
                var received = 0
                while received < total, !state.stop.load(ordering: .relaxed) {
                    let want = Int.random(in: 1...1_500, using: &rng)
                    let n = buffer.withUnsafeMutableBufferPointer {
                        ring.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<want]))
                    }
                    if n == 0 { sched_yield() }
                    for i in 0..<n where buffer[i] != Int16(truncatingIfNeeded: received + i) {
                        state.mismatch.withLock { $0 = $0 ?? "sample \(received + i) was \(buffer[i])" }
                        state.stop.store(true, ordering: .relaxed)
                        break
                    }
                    received += n
                }
                state.received.store(received, ordering: .relaxed)
            })
        #expect(ring.availableToRead == 0)
    }
}
