import ArgumentParser
import Foundation
import VoiceEngine

#if canImport(Glibc)
import Glibc
#endif

/// `voice-engine play`: plays a ringtone through the audio controller, as a calling client would while a call rings.
struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a ringtone (mono 16-bit PCM WAV at 8, 16 or 32 kHz) through the audio controller.",
        discussion: """
            DEVICE is `null` (discard, the default), `file:OUT.wav` (write what is played), or an ALSA PCM name \
            (`default`, `hw:0,0`, `plughw:…`). The null and file devices run in fast time unless --realtime is given; \
            ALSA devices always run in real time. A file that breaks the ringtone rules exits 65 with the reason.
            """)

    @Argument(help: "The sound file.")
    var file: String

    @Flag(help: "Loop the sound gaplessly until --seconds have been played.")
    var loop = false

    @Option(help: "Playout device: null, file:PATH.wav, or an ALSA PCM name.")
    var device = "null"

    @Option(help: "How long to play, in seconds (default: the file's length, or 10 s when looping).")
    var seconds: Double?

    @Option(help: "Device sample rate in Hz.")
    var rate = 48_000

    @Flag(help: "Run the null and file devices at wall-clock pace instead of fast time.")
    var realtime = false

    func validate() throws {
        try OptionRange("--seconds", 0.01...3_600, "seconds").check(seconds)
        try OptionRange("--rate", 8_000...192_000, "Hz").check(rate)
    }

    func run() throws {
        let sound: SoundFile
        if device.hasPrefix("file:") { try OutputPaths.checkFile(String(device.dropFirst(5)), option: "--device") }
        do { sound = try SoundFile(path: file) } catch { throw CommandFailure.dataError(error.description) }
        let format = AudioFormat(sampleRate: rate, channels: 1)
        let duration = seconds ?? (loop ? 10 : Double(sound.samples.count) / Double(sound.sampleRate))
        let controller = AudioController(deviceFormat: format)
        try controller.startPlayingSoundFile(sound, loop: loop)

        let fastTime = !realtime && (device == "null" || device.hasPrefix("file:"))
        let clock = ManualClock()
        let clocking: DeviceClocking = fastTime ? .manual(clock) : .realTime
        let output: any AudioDevice
        if device == "null" {
            output = try NullAudioDevice(direction: .playout, format: format, clocking: clocking)
        } else if device.hasPrefix("file:") {
            output = try FilePlayoutDevice(path: String(device.dropFirst(5)), format: format, clocking: clocking)
        } else {
            output = try ALSADevice(name: device, direction: .playout, format: format)
        }
        defer { output.close() }

        let periodSamples = output.periodFrames * output.format.channels
        var period = [Int16](repeating: 0, count: periodSamples)
        let periods = Int((duration * 100).rounded(.up))
        try output.start()
        var written = 0
        let started = MonotonicClock().now
        while written < periods {
            if output.ring.availableToWrite >= periodSamples {
                period.withUnsafeMutableBufferPointer { buffer in
                    buffer.update(repeating: 0)
                    controller.mix(into: buffer)
                    _ = output.ring.write(UnsafeBufferPointer(buffer))
                }
                written += 1
            } else if !fastTime {
                usleep(2_000)
            }
            if fastTime, let clocked = output as? ClockedAudioDevice {
                clock.advance(by: .milliseconds(10))
                clocked.tick()
            }
        }
        if !fastTime {  // let the device play what is queued
            while output.ring.availableToRead > 0 && (MonotonicClock().now - started).seconds < duration + 1 {
                usleep(5_000)
            }
        }
        if let fileDevice = output as? FilePlayoutDevice { try fileDevice.finalize() }
        let stats = output.statistics
        print(
            "played \(String(format: "%.2f", Double(written) / 100)) s of \(sound.name) on \(output.name) "
                + "(\(output.format)), \(stats.periods) periods, \(stats.xruns) xruns"
                + (fastTime ? ", fast time" : ""))
    }
}
