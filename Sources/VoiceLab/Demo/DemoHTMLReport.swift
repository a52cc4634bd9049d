import VoiceEngine
import Foundation

/// `report.html` of the demo call: one self-contained file (inline SVG, no scripts) with the per-direction summary,
/// packet counters and charts of buffer delay and target, loss and concealment, levels and RTT over time.
enum DemoHTMLReport {
    static let colorA = "#1f77b4"
    static let colorB = "#d62728"
    static let colorTarget = "#ff7f0e"
    static let colorMic = "#2ca02c"

    static func render(_ report: DemoCall.Report, files: DemoCall.Files) -> String {
        func f(_ x: Double?, _ digits: Int = 1) -> String { x.map { String(format: "%.\(digits)f", $0) } ?? "–" }
        let c = report.configuration
        var html = HTMLReport(title: "VoiceEngine demo call")
        html.addParagraph(
            "Two media streams in one process over real UDP (\(c.endpointA) ⇄ \(c.endpointB)), "
                + (c.srtpSuite.map { "SRTP \($0)" } ?? "plain RTP") + ", Opus \(c.opusBitrate / 1000) kb/s, "
                + "\(c.packetTimeMilliseconds) ms packets, \(c.jitterBuffer) jitter buffer, processing at "
                + "\(c.processingRate / 1000) kHz with echo cancellation and noise suppression. Network "
                + "\(c.network.summary), each direction seeded separately (seed \(c.seed)). "
                + "\(f(c.durationSeconds)) s of call in \(f(report.wallClockSeconds, 2)) s of wall-clock time "
                + "(\(c.mode) mode). "
                + (c.echoPathB.map {
                    "B has an echo path (loudspeaker to microphone after \(f($0.delayMilliseconds, 0)) ms at "
                        + "\(f($0.gainDecibels, 0)) dB, \($0.taps) taps), so B's echo canceller is at work."
                } ?? "No echo path."))

        html.addTable(
            heading: "Call quality per direction",
            columns: [
                "Direction", "MOS", "R", "Loss %", "Residual loss %", "Concealed %", "FEC recovered",
                "Buffer delay ms (mean)", "Buffer delay ms (p95)", "RTT ms", "Jitter ms", "ERLE dB"
            ],
            rows: report.directions.map { d in
                [
                    d.direction, f(d.mos, 2), f(d.rFactor), f(d.lossPercent, 2), f(d.residualLossPercent, 2),
                    f(d.concealmentPercent, 2), String(d.fecRecoveredFrames), f(d.meanBufferDelayMilliseconds),
                    f(d.p95BufferDelayMilliseconds), f(d.roundTripMilliseconds), f(d.jitterMilliseconds),
                    f(d.erleDecibels)
                ]
            })

        let transport = [report.transport.aToB, report.transport.bToA]
        html.addTable(
            heading: "Packets per direction",
            columns: [
                "Direction", "RTP sent", "Expected", "Received", "Lost", "Late", "UDP datagrams sent",
                "Read from socket", "Dropped by simulator", "Delivered", "Transport lost", "Stray"
            ],
            rows: zip(report.directions, transport).map { d, t in
                [
                    d.direction, String(d.sent), String(d.expected), String(d.received), String(d.lost),
                    String(d.late), String(t.sent), String(t.arrived), String(t.droppedBySimulator),
                    String(t.delivered), String(t.transportLost), String(t.stray)
                ]
            })

        for d in report.directions {
            let samples = report.timeline.filter { $0.side == d.receiver }
            // The adaptive buffer steers its playout delay (steady) to a target; the buffer level itself saws with
            // every packet. Chart what is steered when the strategy reports it, the level otherwise.
            let steered = samples.contains { $0.playoutDelayMilliseconds != nil }
            html.addChart(
                SVGChart(
                    title: "Jitter buffer \(d.direction) (at \(d.receiver.rawValue.uppercased()))"
                        + (steered ? ": playout delay and its target" : ": buffer delay and target"),
                    xLabel: "call time (s)", yLabel: "delay (ms)",
                    series: [
                        .init(
                            name: steered ? "playout delay" : "buffer delay", color: d.receiver == .a ? colorA : colorB,
                            points: samples.compactMap { s in
                                steered
                                    ? s.playoutDelayMilliseconds.map { (s.timeSeconds, $0) }
                                    : (s.timeSeconds, s.bufferDelayMilliseconds)
                            }),
                        .init(
                            name: "target", color: colorTarget,
                            points: samples.compactMap { s in
                                steered
                                    ? s.targetPlayoutDelayMilliseconds.map { (s.timeSeconds, $0) }
                                    : (s.timeSeconds, s.targetDelayMilliseconds)
                            }, stepped: true),
                        .init(
                            name: "buffer level", color: "#bbbbbb",
                            points: steered ? samples.map { ($0.timeSeconds, $0.bufferDelayMilliseconds) } : [])
                    ]))
        }

        var lossSeries: [SVGChart.Series] = []
        for d in report.directions {
            let windows = perSecond(report.intervals.filter { $0.side == d.receiver })
            let color = d.receiver == .a ? colorA : colorB
            lossSeries.append(
                .init(
                    name: "loss \(d.direction)", color: color, points: windows.map { ($0.time, $0.lossPercent) },
                    stepped: true))
            lossSeries.append(
                .init(
                    name: "concealed \(d.direction)", color: d.receiver == .a ? "#17becf" : colorTarget,
                    points: windows.map { ($0.time, $0.concealedPercent) }, stepped: true))
        }
        html.addChart(
            SVGChart(
                title: "Network loss and concealment, per second", xLabel: "call time (s)", yLabel: "percent",
                series: lossSeries))

        let floor = -80.0
        func level(_ x: Double) -> Double { max(floor, x) }
        html.addChart(
            SVGChart(
                title: "Levels", xLabel: "call time (s)", yLabel: "dBFS",
                series: [
                    .init(
                        name: "A plays (from B)", color: colorA,
                        points: report.timeline.filter { $0.side == .a }.map {
                            ($0.timeSeconds, level($0.playedLevelDBFS))
                        }
                    ),
                    .init(
                        name: "B plays (from A)", color: colorB,
                        points: report.timeline.filter { $0.side == .b }.map {
                            ($0.timeSeconds, level($0.playedLevelDBFS))
                        }
                    ),
                    .init(
                        name: "B microphone (with echo)", color: colorMic,
                        points: report.timeline.filter { $0.side == .b }.map {
                            ($0.timeSeconds, level($0.microphoneLevelDBFS))
                        })
                ]))

        html.addChart(
            SVGChart(
                title: "RTCP round-trip time", xLabel: "call time (s)", yLabel: "RTT (ms)",
                series: CallSide.allCases.map { side in
                    .init(
                        name: "measured by \(side.rawValue.uppercased())", color: side == .a ? colorA : colorB,
                        points: report.timeline.filter { $0.side == side }.compactMap { s in
                            s.roundTripMilliseconds.map { (s.timeSeconds, $0) }
                        }, stepped: true)
                }))

        html.addParagraph(
            "MOS and R are ITU-T G.107 E-model estimates of what each receiver heard: "
                + report.a.quality.assumptions.joined(separator: "; ") + ".")
        html.addParagraph(
            "Files: \(files.aReceived) (what A heard), \(files.bReceived) (what B heard), \(files.bMicrophone) "
                + "(B's microphone: B's speech plus the echo of what B played), \(files.json) (both end-of-call "
                + "reports, configuration and time line).")
        return html.render()
    }

    struct Window {
        var time: Double
        var lossPercent: Double
        var concealedPercent: Double
    }

    /// Per-second loss (RFC 3550 expected/lost deltas) and concealment (concealed/played deltas) from the 100 ms
    /// samples of one receiving side; the last window repeats at the end so stepped lines reach it.
    static func perSecond(_ samples: [DemoCall.IntervalSample]) -> [Window] {
        let sorted = samples.sorted { $0.timeSeconds < $1.timeSeconds }
        var marks = sorted.filter { abs($0.timeSeconds - $0.timeSeconds.rounded()) < 1e-6 }
        if let last = sorted.last, marks.last?.timeSeconds != last.timeSeconds { marks.append(last) }
        var windows: [Window] = []
        for (from, to) in zip(marks, marks.dropFirst()) {
            let expected = to.expectedPackets - from.expectedPackets
            let lost = to.lostPackets - from.lostPackets
            let played = to.playedSamples - from.playedSamples
            let concealed = to.concealedSamples - from.concealedSamples
            windows.append(
                Window(
                    time: from.timeSeconds,
                    lossPercent: expected > 0 ? min(100, max(0, 100 * Double(lost) / Double(expected))) : 0,
                    concealedPercent: played > 0 ? min(100, max(0, 100 * Double(concealed) / Double(played))) : 0))
        }
        if let last = windows.last, let end = marks.last {
            windows.append(
                Window(time: end.timeSeconds, lossPercent: last.lossPercent, concealedPercent: last.concealedPercent))
        }
        return windows
    }
}
