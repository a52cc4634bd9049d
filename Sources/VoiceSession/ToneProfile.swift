/// One piece of a tone's cadence: tone on or silence, for a whole number of milliseconds.
public struct CadenceSegment: Sendable, Hashable, CustomStringConvertible {
    /// Tone (true) or silence (false).
    public var isOn: Bool
    /// Length in milliseconds.
    public var milliseconds: Int

    public init(isOn: Bool, milliseconds: Int) {
        precondition(milliseconds > 0, "a cadence segment must last at least 1 ms")
        self.isOn = isOn
        self.milliseconds = milliseconds
    }

    public static func on(_ milliseconds: Int) -> CadenceSegment {
        CadenceSegment(isOn: true, milliseconds: milliseconds)
    }
    public static func off(_ milliseconds: Int) -> CadenceSegment {
        CadenceSegment(isOn: false, milliseconds: milliseconds)
    }

    public var description: String { "\(isOn ? "on" : "off") \(milliseconds) ms" }
}

/// A call-progress tone: the frequencies sounded together (f1+f2, no modulation) and the cadence.
public struct ToneSpec: Sendable, Hashable {
    /// Frequencies in Hz, added together; each below the Nyquist frequency of the rate it is rendered at. 0 Hz
    /// is allowed (a constant carrier, used to measure the envelope).
    public var frequencies: [Double]
    /// On/off segments; empty means a continuous tone.
    public var cadence: [CadenceSegment]
    /// Whether the cadence repeats (call-progress tones do) or plays once.
    public var repeats: Bool
    /// Peak amplitude of the sum of the frequencies, as a fraction of full scale (each frequency gets an equal
    /// share). 0.3 is about -10.5 dBFS, a comfortable progress-tone level.
    public var amplitude: Double

    public init(frequencies: [Double], cadence: [CadenceSegment], repeats: Bool = true, amplitude: Double = 0.3) {
        precondition(!frequencies.isEmpty && frequencies.allSatisfy { $0 >= 0 }, "a tone needs frequencies ≥ 0 Hz")
        precondition(amplitude >= 0 && amplitude <= 1, "amplitude is a fraction of full scale")
        self.frequencies = frequencies
        self.cadence = cadence
        self.repeats = repeats
        self.amplitude = amplitude
    }

    /// One cadence cycle, in milliseconds.
    public var periodMilliseconds: Int { cadence.reduce(0) { $0 + $1.milliseconds } }
}

/// The call-progress tones the audio controller generates.
public enum CallProgressTone: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The remote side is ringing (ringing tone, ITU-T E.180 §2.2).
    case ringback
    /// The remote side is busy.
    case busy
    /// A second call is waiting (played into the current call).
    case callWaiting

    public var description: String { rawValue }
}

/// The tones of one country or region, from ITU-T E.180 and its Supplement 2 ("Various tones used in national
/// networks"), selectable per call.
public struct ToneProfile: Sendable, Hashable, CustomStringConvertible {
    /// Short name: `"US"`, `"EU"`.
    public var name: String
    public var ringback: ToneSpec
    public var busy: ToneSpec
    public var callWaiting: ToneSpec

    public init(name: String, ringback: ToneSpec, busy: ToneSpec, callWaiting: ToneSpec) {
        self.name = name
        self.ringback = ringback
        self.busy = busy
        self.callWaiting = callWaiting
    }

    /// The spec of `tone` in this profile.
    public func spec(for tone: CallProgressTone) -> ToneSpec {
        switch tone {
        case .ringback: ringback
        case .busy: busy
        case .callWaiting: callWaiting
        }
    }

    /// United States / North America (E.180 Supplement 2, "United States"; the precise-tone plan):
    /// ringback 440+480 Hz 2 s on 4 s off; busy 480+620 Hz 0.5 s on 0.5 s off; call waiting 440 Hz 0.3 s, repeated
    /// after 10 s.
    public static let us = ToneProfile(
        name: "US",
        ringback: ToneSpec(frequencies: [440, 480], cadence: [.on(2_000), .off(4_000)]),
        busy: ToneSpec(frequencies: [480, 620], cadence: [.on(500), .off(500)]),
        callWaiting: ToneSpec(frequencies: [440], cadence: [.on(300), .off(10_000)]))

    /// Europe, the CEPT harmonised tones (E.180 Supplement 2 for most CEPT countries, ETSI TR 101 041): ringback
    /// 425 Hz 1 s on 4 s off; busy 425 Hz 0.5 s on 0.5 s off; call waiting 425 Hz 0.2 s on 0.2 s off 0.2 s on,
    /// then 4 s off (the recommendation allows 3–5 s; national values seen are 4.4, 5 and 8 s).
    public static let eu = ToneProfile(
        name: "EU",
        ringback: ToneSpec(frequencies: [425], cadence: [.on(1_000), .off(4_000)]),
        busy: ToneSpec(frequencies: [425], cadence: [.on(500), .off(500)]),
        callWaiting: ToneSpec(frequencies: [425], cadence: [.on(200), .off(200), .on(200), .off(4_000)]))

    /// Every built-in profile.
    public static let all: [ToneProfile] = [.us, .eu]

    /// The built-in profile called `name` (case-insensitive), or nil.
    public static func named(_ name: String) -> ToneProfile? {
        all.first { $0.name.lowercased() == name.lowercased() }
    }

    public var description: String { name }
}
