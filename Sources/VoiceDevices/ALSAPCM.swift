internal import CALSA

#if canImport(Glibc)
import Glibc
#endif

/// What the hardware configuration settled on.
public struct ALSANegotiatedParameters: Sendable, Hashable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int
    /// Frames per period (what one wake-up of the audio thread transfers).
    public var periodFrames: Int
    /// Frames of the device buffer (the latency the device adds, at most).
    public var bufferFrames: Int
    /// The ALSA plugin type of the PCM (`"HW"`, `"NULL"`, `"PLUG"`, `"IOPLUG"`…).
    public var pcmType: String

    public var description: String {
        "\(sampleRate) Hz, \(channels) ch, S16_LE, period \(periodFrames) frames, "
            + "buffer \(bufferFrames) frames, type \(pcmType)"
    }
}

/// Owns one `snd_pcm_t`, opened non-blocking, and closes it in deinit. All ALSA calls of a PCM live here.
final class ALSAPCM: PCMIO {
    let name: String
    let direction: AudioDirection
    private let pcm: OpaquePointer
    private let wakeup: Wakeup
    private var pollDescriptors: UnsafeMutableBufferPointer<pollfd>
    private var pcmDescriptorCount = 0
    /// Kept for the PCM's lifetime: plugins opened from it may refer to its nodes.
    private let localConfiguration: ALSALocalConfiguration?

    /// Opens `name` for `direction`, looking the name up in `localConfiguration` (asoundrc syntax) instead of
    /// the system configuration when one is given.
    init(name: String, direction: AudioDirection, localConfiguration: String?, wakeup: Wakeup) throws(ALSAError) {
        self.name = name
        self.direction = direction
        self.wakeup = wakeup
        let stream = direction == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK
        var handle: OpaquePointer?
        if let text = localConfiguration {
            let config = try ALSALocalConfiguration(text: text, device: name)
            self.localConfiguration = config
            try alsaCheck(
                snd_pcm_open_lconf(&handle, name, stream, SND_PCM_NONBLOCK, config.root), "snd_pcm_open", device: name)
        } else {
            self.localConfiguration = nil
            try alsaCheck(snd_pcm_open(&handle, name, stream, SND_PCM_NONBLOCK), "snd_pcm_open", device: name)
        }
        pcm = handle!
        pollDescriptors = .allocate(capacity: 0)
    }

    private var isClosed = false

    deinit {
        closeHandle()
        pollDescriptors.deallocate()
    }

    /// Control plane, with no audio thread running: closes the PCM now so other clients can open the device.
    func closeHandle() {
        guard !isClosed else { return }
        isClosed = true
        snd_pcm_close(pcm)
    }

    /// The PCM's plugin type name.
    var typeName: String { String(cString: snd_pcm_type_name(snd_pcm_type(pcm))) }
    /// The null plugin completes every transfer at once instead of at the sample rate.
    var pacesItself: Bool { snd_pcm_type(pcm) != SND_PCM_TYPE_NULL }

    /// Negotiates interleaved S16_LE with the channels, rate, period and buffer nearest to the request.
    func negotiate(
        sampleRate: Int, channels: Int, periodMilliseconds: Int, bufferPeriods: Int, allowResampling: Bool
    ) throws(ALSAError) -> ALSANegotiatedParameters {
        let hw = try HardwareParameters(device: name)
        try alsaCheck(snd_pcm_hw_params_any(pcm, hw.pointer), "snd_pcm_hw_params_any", device: name)
        let supported = capabilities(hw.pointer)
        func require(_ rc: Int32, _ constraint: @autoclosure () -> String) throws(ALSAError) {
            if rc < 0 { throw .unsupportedConfiguration(device: name, constraint: constraint(), supported: supported) }
        }
        try alsaCheck(
            snd_pcm_hw_params_set_rate_resample(pcm, hw.pointer, allowResampling ? 1 : 0),
            "snd_pcm_hw_params_set_rate_resample", device: name)
        try require(
            snd_pcm_hw_params_set_access(pcm, hw.pointer, SND_PCM_ACCESS_RW_INTERLEAVED),
            "interleaved read/write access")
        try require(
            snd_pcm_hw_params_set_format(pcm, hw.pointer, SND_PCM_FORMAT_S16_LE),
            "format S16_LE (a plughw: or default device converts)")
        var channelCount = UInt32(channels)
        try require(snd_pcm_hw_params_set_channels_near(pcm, hw.pointer, &channelCount), "\(channels) channels or near")
        var rate = UInt32(sampleRate)
        var direction: Int32 = 0
        try require(snd_pcm_hw_params_set_rate_near(pcm, hw.pointer, &rate, &direction), "\(sampleRate) Hz or near")
        var period = snd_pcm_uframes_t(max(1, Int(rate) * periodMilliseconds / 1000))
        direction = 0
        try require(
            snd_pcm_hw_params_set_period_size_near(pcm, hw.pointer, &period, &direction),
            "a period of \(period) frames or near")
        var bufferSize = period * snd_pcm_uframes_t(max(2, bufferPeriods))
        try require(
            snd_pcm_hw_params_set_buffer_size_near(pcm, hw.pointer, &bufferSize),
            "a buffer of \(bufferSize) frames or near")
        try alsaCheck(snd_pcm_hw_params(pcm, hw.pointer), "snd_pcm_hw_params", device: name)

        try alsaCheck(
            snd_pcm_hw_params_get_rate(hw.pointer, &rate, &direction), "snd_pcm_hw_params_get_rate", device: name)
        try alsaCheck(
            snd_pcm_hw_params_get_channels(hw.pointer, &channelCount), "snd_pcm_hw_params_get_channels", device: name)
        try alsaCheck(
            snd_pcm_hw_params_get_period_size(hw.pointer, &period, &direction), "snd_pcm_hw_params_get_period_size",
            device: name)
        try alsaCheck(
            snd_pcm_hw_params_get_buffer_size(hw.pointer, &bufferSize), "snd_pcm_hw_params_get_buffer_size",
            device: name)

        let sw = try SoftwareParameters(device: name)
        try alsaCheck(snd_pcm_sw_params_current(pcm, sw.pointer), "snd_pcm_sw_params_current", device: name)
        try alsaCheck(
            snd_pcm_sw_params_set_avail_min(pcm, sw.pointer, period), "snd_pcm_sw_params_set_avail_min", device: name)
        // Playout starts once two periods are queued (one to play, one in hand); capture is started explicitly.
        let threshold = self.direction == .playout ? min(bufferSize, 2 * period) : 1
        try alsaCheck(
            snd_pcm_sw_params_set_start_threshold(pcm, sw.pointer, threshold), "snd_pcm_sw_params_set_start_threshold",
            device: name)
        try alsaCheck(snd_pcm_sw_params(pcm, sw.pointer), "snd_pcm_sw_params", device: name)

        try preparePollDescriptors()
        return ALSANegotiatedParameters(
            sampleRate: Int(rate), channels: Int(channelCount), periodFrames: Int(period),
            bufferFrames: Int(bufferSize),
            pcmType: typeName)
    }

    /// The device's unrestricted configuration space, for error messages.
    private func capabilities(_ hw: OpaquePointer) -> ALSACapabilities {
        var direction: Int32 = 0
        var rateMin: UInt32 = 0
        var rateMax: UInt32 = 0
        snd_pcm_hw_params_get_rate_min(hw, &rateMin, &direction)
        snd_pcm_hw_params_get_rate_max(hw, &rateMax, &direction)
        var channelsMin: UInt32 = 0
        var channelsMax: UInt32 = 0
        snd_pcm_hw_params_get_channels_min(hw, &channelsMin)
        snd_pcm_hw_params_get_channels_max(hw, &channelsMax)
        var periodMin: snd_pcm_uframes_t = 0
        var periodMax: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size_min(hw, &periodMin, &direction)
        snd_pcm_hw_params_get_period_size_max(hw, &periodMax, &direction)
        var bufferMin: snd_pcm_uframes_t = 0
        var bufferMax: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_buffer_size_min(hw, &bufferMin)
        snd_pcm_hw_params_get_buffer_size_max(hw, &bufferMax)
        var formats: [String] = []
        for raw in 0...Int32(SND_PCM_FORMAT_LAST.rawValue) {
            let format = snd_pcm_format_t(rawValue: raw)
            if snd_pcm_hw_params_test_format(pcm, hw, format) == 0, let name = snd_pcm_format_name(format) {
                formats.append(String(cString: name))
            }
        }
        var accessTypes: [String] = []
        for raw in 0...UInt32(SND_PCM_ACCESS_LAST.rawValue) {
            let access = snd_pcm_access_t(rawValue: raw)
            if snd_pcm_hw_params_test_access(pcm, hw, access) == 0, let name = snd_pcm_access_name(access) {
                accessTypes.append(String(cString: name))
            }
        }
        return ALSACapabilities(
            rates: min(rateMin, rateMax)...rateMax, channels: min(channelsMin, channelsMax)...channelsMax,
            formats: formats, accessTypes: accessTypes, periodFrames: UInt(min(periodMin, periodMax))...UInt(periodMax),
            bufferFrames: UInt(min(bufferMin, bufferMax))...UInt(bufferMax))
    }

    /// The PCM's poll descriptors plus the wakeup pipe, allocated once.
    private func preparePollDescriptors() throws(ALSAError) {
        let count = Int(
            try alsaCheck(snd_pcm_poll_descriptors_count(pcm), "snd_pcm_poll_descriptors_count", device: name))
        pollDescriptors.deallocate()
        pollDescriptors = .allocate(capacity: count + 1)
        pollDescriptors.initialize(repeating: pollfd(fd: -1, events: 0, revents: 0))
        let filled = Int(
            try alsaCheck(
                snd_pcm_poll_descriptors(pcm, pollDescriptors.baseAddress, UInt32(count)), "snd_pcm_poll_descriptors",
                device: name))
        pcmDescriptorCount = filled
        pollDescriptors[filled] = pollfd(fd: wakeup.readDescriptor, events: Int16(POLLIN), revents: 0)
    }

    /// Control plane: `snd_pcm_prepare` before (re)starting.
    func prepareForStart() throws(ALSAError) {
        precondition(!isClosed, "the PCM is closed")
        try alsaCheck(snd_pcm_prepare(pcm), "snd_pcm_prepare", device: name)
    }

    /// Control plane, after the thread has stopped: drops pending frames so the next start begins fresh.
    func dropPending() {
        if !isClosed { _ = snd_pcm_drop(pcm) }
    }

    // MARK: PCMIO (audio thread)

    func transfer(_ samples: UnsafeMutablePointer<Int16>, frames: Int) -> Int {
        switch direction {
        case .capture: snd_pcm_readi(pcm, samples, snd_pcm_uframes_t(frames))
        case .playout: snd_pcm_writei(pcm, samples, snd_pcm_uframes_t(frames))
        }
    }

    func prepare() -> Int32 { snd_pcm_prepare(pcm) }
    func start() -> Int32 { snd_pcm_start(pcm) }
    func resume() -> Int32 { snd_pcm_resume(pcm) }

    func wait(timeoutMilliseconds: Int32) -> PCMWaitResult {
        for i in 0..<pollDescriptors.count { pollDescriptors[i].revents = 0 }
        let rc = poll(pollDescriptors.baseAddress, nfds_t(pollDescriptors.count), timeoutMilliseconds)
        if rc < 0 { return errno == EINTR ? .ready : .error(code: -Int(errno)) }
        if rc == 0 { return .timeout }
        if pollDescriptors[pcmDescriptorCount].revents != 0 { return .wakeup }
        var revents: UInt16 = 0
        let demangled = snd_pcm_poll_descriptors_revents(
            pcm, pollDescriptors.baseAddress, UInt32(pcmDescriptorCount), &revents)
        if demangled < 0 { return .error(code: Int(demangled)) }
        return .ready  // POLLERR included: the next transfer reports the error and the loop recovers
    }
}

/// Owns a `snd_pcm_hw_params_t` (the `_malloc` form, so no alloca wrapper is needed).
private final class HardwareParameters {
    let pointer: OpaquePointer
    init(device: String) throws(ALSAError) {
        var raw: OpaquePointer?
        try alsaCheck(snd_pcm_hw_params_malloc(&raw), "snd_pcm_hw_params_malloc", device: device)
        pointer = raw!
    }
    deinit { snd_pcm_hw_params_free(pointer) }
}

/// Owns a `snd_pcm_sw_params_t`.
private final class SoftwareParameters {
    let pointer: OpaquePointer
    init(device: String) throws(ALSAError) {
        var raw: OpaquePointer?
        try alsaCheck(snd_pcm_sw_params_malloc(&raw), "snd_pcm_sw_params_malloc", device: device)
        pointer = raw!
    }
    deinit { snd_pcm_sw_params_free(pointer) }
}

/// Owns a configuration tree parsed from asoundrc-syntax text.
private final class ALSALocalConfiguration {
    let root: OpaquePointer
    init(text: String, device: String) throws(ALSAError) {
        var top: OpaquePointer?
        try alsaCheck(snd_config_top(&top), "snd_config_top", device: device)
        root = top!
        var input: OpaquePointer?
        let bytes = Array(text.utf8)
        let opened = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { snd_input_buffer_open(&input, $0.baseAddress, buffer.count) }
        }
        try alsaCheck(opened, "snd_input_buffer_open", device: device)
        defer { snd_input_close(input) }
        try alsaCheck(snd_config_load(root, input), "snd_config_load", device: device)
    }
    deinit { snd_config_delete(root) }
}
