import Foundation
import Testing
@testable import VoiceLab

@Suite("HTML report")
struct HTMLReportTests {
    @Test func chartDrawsOnePathPerSeriesWithEscapedLabels() {
        let chart = SVGChart(
            title: "delay <ms>", xLabel: "time (s)", yLabel: "ms",
            series: [
                .init(name: "buffer", color: "#1f77b4", points: [(0, 40), (1, 60), (2, 45)]),
                .init(name: "target & more", color: "#d62728", points: [(0, 50), (2, 50)], stepped: true)
            ])
        let svg = chart.render()
        #expect(svg.hasPrefix("<svg"))
        #expect(svg.components(separatedBy: "<path ").count - 1 == 2)
        #expect(svg.contains("delay &lt;ms&gt;"))
        #expect(svg.contains("target &amp; more"))
        #expect(!svg.contains("nan") && !svg.contains("inf"))
    }

    @Test func emptyAndNonFiniteSeriesStillRender() {
        let svg = SVGChart(
            title: "empty", xLabel: "x", yLabel: "y",
            series: [.init(name: "none", color: "black", points: [(0, .nan), (1, .infinity)])]
        ).render()
        #expect(svg.hasSuffix("</svg>"))
        #expect(!svg.contains("nan"))
    }

    @Test func niceStepsAreOneTwoOrFiveTimesAPowerOfTen() {
        #expect(SVGChart.niceStep(0.7) == 1)
        #expect(SVGChart.niceStep(13) == 20)
        #expect(SVGChart.niceStep(31) == 50)
        #expect(SVGChart.niceStep(0.031) == 0.05)
    }

    @Test func reportHoldsTablesAndCharts() {
        var report = HTMLReport(title: "Call <A> to B")
        report.addTable(heading: "Summary", columns: ["figure", "A→B"], rows: [["MOS", "4.3"]])
        report.addChart(SVGChart(title: "c", xLabel: "x", yLabel: "y", series: []))
        let html = report.render()
        #expect(html.contains("<title>Call &lt;A&gt; to B</title>"))
        #expect(html.contains("<td>MOS</td><td>4.3</td>"))
        #expect(html.contains("<svg"))
    }
}
