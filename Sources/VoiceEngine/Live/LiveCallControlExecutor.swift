import Foundation
import VoiceDevices

/// The task executor of every live call's control plane in the process: one thread of its own that sleeps until
/// a job arrives.
///
/// The control plane (opening the microphone when the session sees the call established, device events, the
/// peer's BYE, ending the call) must not wait for the Swift cooperative pool: that pool has one thread per core,
/// and a busy application — or a parallel `swift test` — can hold every one of them for seconds, during which a
/// call whose microphone waits for the session to open it would send only silence. Tasks started with this
/// executor as their preference run here, and so do the calls they make into default actors (`AudioSession`).
/// The thread wakes only for events, never periodically.
final class LiveCallControlExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `jobs` is guarded by `condition`.

    static let shared = LiveCallControlExecutor()

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init() {
        let thread = Thread { [unowned self] in self.run() }
        thread.name = "voice-engine.control"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        setCurrentThreadName("voice-control")
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: executor) }
        }
    }
}
