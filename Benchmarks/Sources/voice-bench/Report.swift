#if canImport(Glibc)
import Glibc
#endif

/// Prints a suite's results: an aligned table as each operation finishes, then (with `--json`) one JSON line.
/// Used by every side-by-side suite and by `voice-bench pipeline`, which only names its columns differently.
struct Report {
    let suite: String
    /// What is compared, for the title line.
    var subject = "Swift wrapper vs plain C loop"
    var nameWidth = 34
    /// The last column: how many iterations (or pipeline steps) one round has.
    var countTitle = "iter/round"
    var countWidth = 12

    func printHeader(rounds: Int) {
        print("voice-bench \(suite): \(subject), same calls and input; median of \(rounds) alternating rounds")
        print(
            pad("operation", nameWidth) + pad("Swift µs", 12, right: true) + pad("C µs", 12, right: true)
                + pad("ratio", 9, right: true) + pad("paired", 9, right: true)
                + pad(countTitle, countWidth, right: true))
        fflush(nil)  // all streams: progress shows when piped too
    }

    func printRow(_ r: SideBySideResult) {
        print(
            pad(r.name, nameWidth) + pad(fixed(r.swiftMicroseconds, 3), 12, right: true)
                + pad(fixed(r.cMicroseconds, 3), 12, right: true) + pad(fixed(r.ratio, 3), 9, right: true)
                + pad(fixed(r.pairedRatio, 3), 9, right: true)
                + pad(String(r.iterationsPerRound), countWidth, right: true))
        fflush(nil)  // all streams: progress shows when piped too
    }

    /// `{"suite":"codec","results":[{"name":…,"swift_us":…,"c_us":…,"ratio":…,"paired_ratio":…}]}` on one line;
    /// `ratio` is Swift median / C median, `paired_ratio` the median of the back-to-back round ratios.
    /// `extraFields` (`,"key":value,…`) follow the results inside the object.
    func printJSON(_ results: [SideBySideResult], extraFields: String = "") {
        let items = results.map { r in
            "{\"name\":\(quoted(r.name)),\"swift_us\":\(fixed(r.swiftMicroseconds, 4)),"
                + "\"c_us\":\(fixed(r.cMicroseconds, 4)),\"ratio\":\(fixed(r.ratio, 4)),"
                + "\"paired_ratio\":\(fixed(r.pairedRatio, 4))}"
        }
        print("{\"suite\":\(quoted(suite)),\"results\":[\(items.joined(separator: ","))]\(extraFields)}")
        fflush(nil)  // all streams: progress shows when piped too
    }

    private func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let count = text.count
        guard count < width else { return text + " " }
        let spaces = String(repeating: " ", count: width - count)
        return right ? spaces + text : text + spaces
    }
}

/// `value` with exactly `decimals` digits after the point (no Foundation needed); `null` when not finite.
/// The machine's 1, 5 and 15 minute load averages ("?" where /proc is absent): speed figures say how loaded it was.
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
        .joined(separator: " ") ?? "?"
}

func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "null" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int64((abs(value) * scale).rounded())
    let unit = Int64(scale)
    let fraction = String(scaled % unit)
    let sign = value < 0 && scaled != 0 ? "-" : ""
    guard decimals > 0 else { return sign + String(scaled) }
    return sign + String(scaled / unit) + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
}
