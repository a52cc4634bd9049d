import Foundation
import VoiceEngine
import VoiceSIP

/// DTMF in `sip call` and `sip listen`: `--dtmf` keys once the call is established, then `dtmf <keys>` lines read
/// from stdin; each batch goes as RFC 4733 telephone-events when the peer negotiated them, else as SIP INFO.
enum SIPCallDTMF {
    static func start(keys: String?, live: LiveCall, call: SIPCall) {
        Task {
            if let keys {
                // A moment for the peer's media to latch onto ours before the first event.
                try? await Task.sleep(for: .milliseconds(500))
                await send(keys, live: live, call: call)
            }
            for await line in standardInputLines() {
                let words = line.split(separator: " ", omittingEmptySubsequences: true)
                guard words.count == 2, words[0].lowercased() == "dtmf" else {
                    if !words.isEmpty { say("stdin: expected 'dtmf <keys>', got '\(line)'") }
                    continue
                }
                await send(String(words[1]), live: live, call: call)
            }
        }
    }

    /// Lines of stdin, read on a thread of their own (a blocking read the call's end does not wait for).
    static func standardInputLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }

    static func send(_ keys: String, live: LiveCall, call: SIPCall) async {
        let digits: [DTMFDigit]
        do { digits = try DTMFDigit.parse(keys) } catch {
            say("dtmf: \(error)")
            return
        }
        if live.sendsTelephoneEvents {
            do {
                try live.sendDTMF(digits)
                say("dtmf: sending \(keys) (RFC 4733)")
            } catch { say("dtmf: \(error)") }
        } else {
            say("dtmf: sending \(keys) (SIP INFO)")
            do { try await call.sendDTMF(digits) } catch { say("dtmf: \(error)") }
        }
    }
}
