import Foundation
import Synchronization
import VoiceCore
import VoiceDevices
import VoiceSession

/// Renders an ``AudioController`` (ringtone, ringback, busy tone) on a speaker while no call media runs: a
/// call's ``LiveCall`` mixes the controller into its own playout, and outside a call nothing else would.
///
/// The speaker is opened in the controller's format with a clock of its own (an ALSA device's thread, or a file
/// or null device on a real-time timer thread); a small thread keeps its ring a few blocks full with silence plus
/// the controller's voices. That thread allocates nothing after start: one block buffer is allocated before the
/// loop. The controller allows one mixing thread at a time, so the owner stops this player (``stop()`` joins the
/// thread) before a call's playout starts mixing, and starts it again after the call's media stopped.
public final class TonePlayout: @unchecked Sendable {
    // @unchecked Sendable: `running` is atomic; the thread is the only reader of the device ring's write side;
    // `stopped` is a semaphore; everything else is immutable.

    /// The speaker the tones are played on.
    public let device: any AudioDevice
    private let controller: AudioController
    private let running = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    /// Blocks kept queued for the speaker: enough to ride out a late wake-up, short enough that a stopped tone
    /// stops within 40 ms.
    static let queuedBlocks = 4

    /// Opens `speaker` (not started yet) in the controller's format.
    /// - Throws: ``LiveCallError/deviceOpenFailed(device:reason:)``.
    public init(controller: AudioController, speaker: LiveDeviceName) throws(LiveCallError) {
        self.controller = controller
        device = try speaker.open(
            direction: .playout, format: controller.deviceFormat, loop: false, clocking: .realTime)
    }

    /// Starts the speaker and the feeding thread. Starting a running player does nothing.
    /// - Throws: ``LiveCallError/deviceOpenFailed(device:reason:)`` when the device does not start.
    public func start() throws(LiveCallError) {
        guard !running.load(ordering: .acquiring) else { return }
        do { try device.start() } catch { throw .deviceOpenFailed(device: device.name, reason: "\(error)") }
        running.store(true, ordering: .releasing)
        let thread = Thread { [self] in feed() }
        thread.name = "voice-tones"
        thread.start()
    }

    /// Stops the thread (waits for it, at most one 10 ms tick) and closes the speaker (a file is finalised).
    public func stop() {
        if running.exchange(false, ordering: .acquiringAndReleasing) { stopped.wait() }
        device.close()
    }

    private func feed() {
        let channels = controller.deviceFormat.channels
        let block = controller.deviceFormat.samplesPerBlock * channels
        let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: block)
        defer {
            buffer.deallocate()
            stopped.signal()
        }
        let ring = device.ring
        var deadline = MonotonicClock().now.nanoseconds
        while running.load(ordering: .acquiring) {
            while ring.availableToWrite >= block, ring.availableToRead < Self.queuedBlocks * block {
                buffer.update(repeating: 0)
                controller.mix(into: buffer)
                _ = ring.write(UnsafeBufferPointer(buffer))
            }
            _ = LiveCallMediaLoop.sleepToNextTick(&deadline, maximumLagTicks: 10)
        }
    }
}
