#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// CPU time and wake-ups of one process, read per thread from `/proc/PID/task/*`: `schedstat` (nanoseconds on
/// CPU, and nanoseconds runnable but waiting for a CPU) and `status` (voluntary + non-voluntary context switches,
/// i.e. how often the thread was scheduled in).
/// The same reading for the engine (this process) and for baresip, so the two are measured alike.
struct ThreadCost {
    struct Thread {
        var name: String
        var cpuNanoseconds: Int64
        var switches: Int64
        /// Time runnable but not running (on a run queue): what other threads and processes took from it.
        var waitNanoseconds: Int64 = 0
    }

    /// By thread id.
    var threads: [Int: Thread]

    var cpuNanoseconds: Int64 { threads.values.reduce(0) { $0 + $1.cpuNanoseconds } }
    var switches: Int64 { threads.values.reduce(0) { $0 + $1.switches } }

    /// Reads every live thread of `pid` now (a thread that exits meanwhile is skipped).
    static func read(pid: Int32) -> ThreadCost {
        let base = "/proc/\(pid)/task"
        var threads: [Int: Thread] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] {
            guard let tid = Int(entry),
                let schedstat = try? String(contentsOfFile: "\(base)/\(entry)/schedstat", encoding: .utf8),
                let status = try? String(contentsOfFile: "\(base)/\(entry)/status", encoding: .utf8)
            else { continue }
            var name = "?"
            var switches: Int64 = 0
            for line in status.split(separator: "\n") {
                if line.hasPrefix("Name:") { name = line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
                if line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                    switches += Int64(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            let fields = schedstat.split(separator: " ")
            let cpu = Int64(fields.first ?? "0") ?? 0
            let wait = fields.count > 1 ? Int64(fields[1]) ?? 0 : 0
            threads[tid] = Thread(name: name, cpuNanoseconds: cpu, switches: switches, waitNanoseconds: wait)
        }
        return ThreadCost(threads: threads)
    }

    /// What each thread alive at both readings did between `earlier` and `self`.
    func since(_ earlier: ThreadCost) -> ThreadCost {
        var delta: [Int: Thread] = [:]
        for (tid, now) in threads {
            let before = earlier.threads[tid]
            delta[tid] = Thread(
                name: now.name, cpuNanoseconds: now.cpuNanoseconds - (before?.cpuNanoseconds ?? 0),
                switches: now.switches - (before?.switches ?? 0),
                waitNanoseconds: now.waitNanoseconds - (before?.waitNanoseconds ?? 0))
        }
        return ThreadCost(threads: delta)
    }

    /// Threads grouped by name: (name, count, CPU ns, switches), busiest first.
    var byName: [(name: String, count: Int, cpuNanoseconds: Int64, switches: Int64)] {
        var groups: [String: (Int, Int64, Int64)] = [:]
        for t in threads.values {
            let g = groups[t.name] ?? (0, 0, 0)
            groups[t.name] = (g.0 + 1, g.1 + t.cpuNanoseconds, g.2 + t.switches)
        }
        return groups.map { (name: $0.key, count: $0.value.0, cpuNanoseconds: $0.value.1, switches: $0.value.2) }
            .sorted { $0.switches > $1.switches }
    }
}

/// The whole machine's CPU time from `/proc/stat` (clock ticks): busy (everything but idle and iowait) and total,
/// so a window's busy cores are Δbusy / Δtotal × cores — what every process, not only the measured one, used.
/// `steal` is time the hypervisor ran something else while this VM's vCPU wanted to run (counted in busy): a real-time
/// thread's priority cannot win it back.
struct MachineCPU {
    var busy: Int64
    var total: Int64
    var steal: Int64 = 0

    static func read() -> MachineCPU {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return MachineCPU(busy: 0, total: 0) }
        let values = line.split(separator: " ").dropFirst().prefix(8).map { Int64($0) ?? 0 }
        let total = values.reduce(0, +)
        let idle = values.count > 4 ? values[3] + values[4] : total
        return MachineCPU(busy: total - idle, total: total, steal: values.count > 7 ? values[7] : 0)
    }

    /// Busy cores of the machine between `earlier` and `self`.
    func busyCores(since earlier: MachineCPU, cores: Int) -> Double {
        let total = total - earlier.total
        return total > 0 ? Double(busy - earlier.busy) / Double(total) * Double(cores) : 0
    }

    /// Cores' worth of time stolen by the hypervisor between `earlier` and `self`.
    func stolenCores(since earlier: MachineCPU, cores: Int) -> Double {
        let total = total - earlier.total
        return total > 0 ? Double(steal - earlier.steal) / Double(total) * Double(cores) : 0
    }
}

/// CPU time of the calling thread, nanoseconds.
func threadCPUNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
