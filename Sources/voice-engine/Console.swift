import Dispatch
import Foundation

/// Status and diagnostics go to stderr, so stdout carries only what a command hands over (an a=crypto line, SDP,
/// a table or JSON).
func say(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Runs async work to completion from a synchronous command (the main thread waits on a semaphore while the work
/// runs on the cooperative pool).
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Task {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

private final class ResultBox<T>: @unchecked Sendable {
    // @unchecked Sendable: written once by the task before it signals the semaphore the reader waits on.
    var result: Result<T, any Error>?
}
