// Over 600 lines on purpose: the agent is one state machine whose candidates, timers, packet handling and checklist
// share private state (RFC 8445 §6-§7); cut into files, that state would have to be visible to the whole module.
import VoiceCore

/// Why a full ICE agent gave up (RFC 8445 §8.1.2 / RFC 7675).
public enum ICEError: Error, Equatable, Sendable {
    /// Every pair failed after both sides said they had no more candidates (end-of-candidates).
    case allPairsFailed
    /// The selected pair's consent expired (RFC 7675: no answered check for ``ICEAgent/consentLifetime``).
    case consentExpired
}

/// A full ICE agent (RFC 8445) for one data stream with one component (BUNDLE + rtcp-mux: all a WebRTC audio call
/// needs), written as a state machine without I/O: the caller owns the sockets and the TURN allocation, feeds
/// every STUN datagram to ``handle(_:from:base:now:)``, calls ``tick(now:)`` at least every ``pacing``, and sends
/// what ``takeTransmits()`` returns. So it runs in fast time in tests and on the transport thread in a call, with
/// no lock and no thread of its own (why not libnice: ARCHITECTURE.md §5.10).
///
/// What it does, each with its section:
/// - candidates: local ones the caller gathered (host on every interface, srflx, relay) with RFC 8445 §5.1.2
///   priorities and §5.1.1.3 foundations; srflx ones are signalled but paired through their base (§6.1.2.4);
///   remote ones from SDP or trickled (RFC 8838), until end-of-candidates on both sides;
/// - the checklist (§6.1.2): pairs of the same address family, pair priority (§6.1.2.3), frozen/waiting by
///   foundation (§6.1.2.6), at most ``maximumPairs``;
/// - checks paced one per ``pacing`` (Ta, §14.2), triggered checks first (§7.3.1.4; a check still unanswered
///   goes again at once when the peer's check on its pair arrives), retransmission with RTO doubling until
///   ``maximumTransmissions`` (RFC 8489 §6.2.1), peer-reflexive remote candidates (§7.3.1.3);
/// - role conflicts (§7.3.1.1: 487 and the tie-breaker, both ways);
/// - regular nomination (§8.1.1) by the controlling side, once the best valid pair cannot be beaten by a pair
///   still being checked, or ``nominationDelay`` after the first valid pair;
/// - renomination (``renomination``): after a pair is selected, both sides go on checking the pairs without a TURN
///   relay that could beat it, one per ``renominationPacing``, each until it succeeds or fails; the controlling side
///   nominates such a pair once valid, and the controlled side selects the highest-priority
///   nominated pair (§8.1.1), so media leaves a relay that was valid first for a direct pair that answered later;
/// - consent freshness (RFC 7675) on the selected pair, which also serves as the keepalive (§11): a check every
///   ``consentInterval`` ±20 %, media stops ``consentLifetime`` after the last answer;
/// - ICE restart (§9): new local credentials, the peer's new ones and candidates; media stays on the old pair
///   until the new checks select one.
///
/// Not thread-safe: one thread (the transport's) drives it.
public final class ICEAgent {
    public enum Role: Sendable, Equatable { case controlling, controlled }

    public enum State: Sendable, Equatable {
        case checking
        /// A pair is nominated and selected; media flows while consent lasts.
        case connected
        case failed(ICEError)
    }

    public enum PairState: Sendable, Equatable { case frozen, waiting, inProgress, succeeded, failed }

    /// A local candidate: what is signalled, and the base that sends for it (the socket's address, or the relayed
    /// address for a relay candidate).
    public struct LocalCandidate: Equatable, Sendable {
        public var candidate: ICECandidate
        public var base: TransportAddress
    }

    public struct CandidatePair: Equatable, Sendable {
        /// The local base the checks leave from (a socket, or a relayed address).
        public var local: TransportAddress
        public var remote: TransportAddress
        public var localPriority: UInt32
        public var remotePriority: UInt32
        var foundation: String
        public var state: PairState = .frozen
        public var nominated = false
        /// Controlled side: USE-CANDIDATE arrived before our own check on this pair succeeded (§7.3.1.5).
        var nominateOnSuccess = false

        /// RFC 8445 §6.1.2.3: 2^32·min(G, D) + 2·max(G, D) + (G > D ? 1 : 0), G the controlling side's priority.
        public func priority(weAreControlling: Bool) -> UInt64 {
            let g = UInt64(weAreControlling ? localPriority : remotePriority)
            let d = UInt64(weAreControlling ? remotePriority : localPriority)
            return (min(g, d) << 32) + 2 * max(g, d) + (g > d ? 1 : 0)
        }
    }

    /// A datagram to send from `base` to `destination`.
    public struct Transmit: Equatable, Sendable {
        public var base: TransportAddress
        public var destination: TransportAddress
        public var datagram: [UInt8]
    }

    /// The pair media uses, with the credentials its consent checks are signed with (they survive a restart
    /// until a new pair is selected).
    public struct Selected: Equatable, Sendable {
        public var local: TransportAddress
        public var remote: TransportAddress
        var localCredentials: ICECredentials
        var remoteCredentials: ICECredentials
    }

    private struct Transaction {
        var local: TransportAddress
        var remote: TransportAddress
        var datagram: [UInt8]
        var transmissions = 1
        var rto: MediaTime
        var due: MediaTime
        var nominating: Bool
        var consent: Bool
        var remotePassword: String
        /// Sent again at once because the peer's check on the pair arrived (§7.3.1.4; once per transaction).
        var hurried = false
    }

    // Parameters (RFC 8445 §14, RFC 7675 §5.1).
    /// Ta: one new check per this interval.
    public var pacing = MediaTime.milliseconds(50)
    /// First retransmission timeout of a check; doubles each time.
    public var initialRTO = MediaTime.milliseconds(250)
    public var maximumRTO = MediaTime.seconds(3)
    /// Sends of one check before its pair fails (the first + retransmissions).
    public var maximumTransmissions = 7
    public var maximumPairs = 100
    /// The controlling side nominates at the latest this long after the first valid pair.
    public var nominationDelay = MediaTime.milliseconds(200)
    /// After a pair is selected, both sides keep checking the pairs without a relay that could beat it and the
    /// controlling side nominates the best one that succeeds (with USE-CANDIDATE: a standard controlled
    /// agent selects the highest-priority nominated pair). Off: checking ends with the first nomination (§8.1.2).
    public var renomination = true
    /// One new check of a pair that could beat the selected one per this interval (triggered checks keep Ta).
    public var renominationPacing = MediaTime.milliseconds(200)
    public var consentInterval = MediaTime.seconds(5)
    public var consentLifetime = MediaTime.seconds(30)

    public private(set) var role: Role
    public let tieBreaker: UInt64
    public private(set) var local: ICECredentials
    public private(set) var remote: ICECredentials?
    public private(set) var state: State = .checking
    public private(set) var localCandidates: [LocalCandidate] = []
    public private(set) var remoteCandidates: [ICECandidate] = []
    public private(set) var pairs: [CandidatePair] = []
    public private(set) var selected: Selected?
    /// Role changes after a 487 or a conflicting request (§7.3.1.1, §7.2.5.1).
    public private(set) var roleSwitches = 0
    /// Checks sent (first transmissions; triggered and ordinary) and requests refused or dropped.
    public private(set) var checksSent = 0
    public private(set) var rejectedRequests = 0
    /// Remote candidates with an mDNS or otherwise non-literal address (not resolved; skipped).
    public private(set) var unresolvedRemoteCandidates = 0

    private var localGatheringComplete = false
    private var remoteGatheringComplete = false
    private var triggered: [Int] = []
    private var transactions: [[UInt8]: Transaction] = [:]
    private var nextCheck = MediaTime.zero
    /// When the next check of a pair that could beat the selected one may start (``renominationPacing``).
    private var nextRenominationCheck = MediaTime.zero
    private var firstValid: MediaTime?
    /// A nominating check is in flight (the controlling side sends one at a time).
    private var nominating = false
    private var checklistCompleted = false
    private var lastConsent: MediaTime?
    private var nextConsent: MediaTime?
    /// Requests that arrived before the peer's credentials (trickle: the offer's checks can beat the answer).
    private var early:
        [(
            source: TransportAddress, base: TransportAddress, priority: UInt32, useCandidate: Bool,
            time: MediaTime
        )] = []
    private var foundations: [String: String] = [:]
    private var outbox: [Transmit] = []

    public init(
        role: Role, local: ICECredentials = .random(), remote: ICECredentials? = nil,
        tieBreaker: UInt64 = .random(in: 0...UInt64.max)
    ) {
        self.role = role
        self.local = local
        self.remote = remote
        self.tieBreaker = tieBreaker
    }

    // MARK: Candidates and signalling

    /// Adds a gathered local candidate and returns it as signalled (trickled, or written into the SDP).
    /// `base` is the socket's address for host and srflx, the relayed address for relay; `related` is the
    /// srflx/relay candidate's raddr (the host or mapped address). Pairs with the known remote candidates form.
    @discardableResult
    public func addLocalCandidate(
        kind: ICECandidate.Kind, address: TransportAddress, base: TransportAddress,
        related: TransportAddress? = nil, server: String = ""
    ) -> ICECandidate {
        if let existing = localCandidates.first(where: { $0.candidate.address == address && $0.candidate.kind == kind })
        {
            return existing.candidate
        }
        // Local preference (§5.1.2.2): IPv6 before IPv4 (RFC 8421), then the order of gathering.
        let sameKind = localCandidates.filter { $0.candidate.kind == kind }.count
        let preference = UInt32(max(0, (address.family == .ipv6 ? 65_535 : 32_767) - 16 * sameKind))
        let key = "\(kind.rawValue)|\(base.host)|\(server)"
        let foundation = foundations[key] ?? String(foundations.count + 1)
        foundations[key] = foundation
        let candidate = ICECandidate(
            foundation: foundation, priority: ICECandidate.priority(kind: kind, localPreference: preference),
            host: address.host, port: address.port, kind: kind, relatedHost: related?.host, relatedPort: related?.port)
        localCandidates.append(LocalCandidate(candidate: candidate, base: base))
        if kind != .srflx {  // §6.1.2.4: a srflx pair is redundant with its base's pair
            for remote in remoteCandidates { addPair(localIndex: localCandidates.count - 1, remote: remote) }
        }
        return candidate
    }

    /// Our side has no more candidates (end-of-candidates, RFC 8838 §8.2).
    public func localGatheringDone() { localGatheringComplete = true }

    /// The peer's credentials (from its SDP; again with new ones after an ICE restart).
    public func setRemoteCredentials(_ credentials: ICECredentials) {
        remote = credentials
        let pending = early
        early = []
        for e in pending {
            handleCheck(from: e.source, base: e.base, priority: e.priority, useCandidate: e.useCandidate, now: e.time)
        }
    }

    /// Adds a remote candidate from the SDP or a trickle message; non-UDP, other components and mDNS names are
    /// skipped (counted).
    public func addRemoteCandidate(_ candidate: ICECandidate) {
        guard candidate.isUDP, candidate.component == 1 else { return }
        guard let address = candidate.address else {
            unresolvedRemoteCandidates += 1
            return
        }
        if let i = remoteCandidates.firstIndex(where: { $0.address == address }) {
            // A prflx we learned from a check, now signalled: keep the signalled type and priority (§7.3.1.3), and
            // pair it with the local candidates its check did not arrive on.
            guard remoteCandidates[i].kind == .prflx else { return }
            remoteCandidates[i] = candidate
        } else {
            remoteCandidates.append(candidate)
        }
        for i in localCandidates.indices where localCandidates[i].candidate.kind != .srflx {
            addPair(localIndex: i, remote: candidate)
        }
    }

    /// The peer has no more candidates (`a=end-of-candidates`).
    public func remoteGatheringDone() { remoteGatheringComplete = true }

    /// ICE restart (§9): new local credentials (to signal), the checklist starts over; the caller then gives the
    /// peer's new credentials and candidates. Media stays on the current selected pair until a new one is
    /// nominated, and its consent checks keep the old credentials meanwhile.
    public func restart(local newLocal: ICECredentials = .random()) {
        local = newLocal
        remote = nil
        remoteCandidates = []
        pairs = []
        triggered = []
        transactions = transactions.filter { $0.value.consent }
        early = []
        firstValid = nil
        nominating = false
        checklistCompleted = false
        remoteGatheringComplete = false
        if case .failed(.allPairsFailed) = state { state = .checking }
        if selected == nil { state = .checking }
    }

    /// Until when media may be sent on the selected pair (RFC 7675); nil before one is selected.
    public var consentDeadline: MediaTime? {
        guard selected != nil, let lastConsent else { return nil }
        return lastConsent + consentLifetime
    }

    /// Whether media may be sent now: a pair is selected and its consent is fresh.
    public func hasConsent(now: MediaTime) -> Bool {
        guard selected != nil, let lastConsent else { return false }
        return now - lastConsent < consentLifetime
    }

    /// What to send, in order (drains the queue).
    public func takeTransmits() -> [Transmit] {
        defer { outbox.removeAll(keepingCapacity: true) }
        return outbox
    }

    // MARK: Time

    /// Paces the next check, retransmits, nominates, sends consent checks and expires consent.
    public func tick(now: MediaTime) {
        if case .failed = state { return }
        retransmit(now: now)
        if selected != nil, let lastConsent, now - lastConsent >= consentLifetime {
            state = .failed(.consentExpired)
            return
        }
        if let nextConsent, let selected, now >= nextConsent {
            sendCheck(
                local: selected.local, remote: selected.remote, localCredentials: selected.localCredentials,
                remoteCredentials: selected.remoteCredentials, nominate: false, consent: true, now: now)
            self.nextConsent = now + consentInterval * Double.random(in: 0.8...1.2)
        }
        nominateIfReady(now: now)
        if now >= nextCheck, let index = nextPairToCheck(now: now) {
            startCheck(index, now: now)
            nextCheck = now + pacing
        }
        updateFailure()
    }

    /// When ``tick(now:)`` next has something to do: a paced check or a nomination while checks run, a
    /// retransmission, a consent check, consent running out. Nil when nothing is due before a datagram or new
    /// candidates arrive. A driver sleeps until then rather than ticking at a fixed rate through the whole call.
    public func nextTimer(now: MediaTime) -> MediaTime? {
        if case .failed = state { return nil }
        var due: MediaTime?
        func include(_ time: MediaTime) { due = min(due ?? time, time) }
        for transaction in transactions.values { include(transaction.due) }
        if selected != nil, let lastConsent { include(lastConsent + consentLifetime) }
        if selected != nil, let nextConsent { include(nextConsent) }
        if remote != nil {
            let checksLeft =
                triggered.contains { pairs[$0].state == .waiting }
                || !checklistCompleted && pairs.contains { $0.state == .waiting || $0.state == .frozen }
            if checksLeft { include(max(nextCheck, now)) }
            if checklistCompleted, renominationCandidate() != nil {
                include(max(nextCheck, nextRenominationCheck, now))
            }
        }
        if let nomination = nominationDue(now: now) { include(nomination) }
        return due
    }

    private func nextPairToCheck(now: MediaTime) -> Int? {
        guard remote != nil else { return nil }
        while let i = triggered.first {
            triggered.removeFirst()
            if pairs[i].state == .waiting { return i }
        }
        if checklistCompleted {
            // §8.1.2 ends the checks here; with renomination the pairs that could beat the selected one go on,
            // more calmly (media flows meanwhile), each checked once.
            guard now >= nextRenominationCheck, let i = renominationCandidate() else { return nil }
            nextRenominationCheck = now + renominationPacing
            return i
        }
        return bestPair { $0.state == .waiting } ?? bestPair { $0.state == .frozen }
    }

    /// The highest-priority pair among those `include` accepts.
    private func bestPair(_ include: (CandidatePair) -> Bool) -> Int? {
        let controlling = role == .controlling
        return pairs.indices.filter { include(pairs[$0]) }
            .max {
                pairs[$0].priority(weAreControlling: controlling) < pairs[$1].priority(weAreControlling: controlling)
            }
    }

    /// The index of the selected pair in this checklist: nil before a selection, and after a restart until the new
    /// checks select one (the old pair is not in the new checklist).
    private func selectedPairIndex() -> Int? {
        guard let selected, selected.localCredentials == local else { return nil }
        return pairIndex(local: selected.local, remote: selected.remote)
    }

    /// With ``renomination``, after a selection: the waiting (else frozen) pair of highest priority that could beat
    /// it without a relay on either side and has not been checked yet.
    private func renominationCandidate() -> Int? {
        guard renomination, let current = selectedPairIndex() else { return nil }
        let floor = pairs[current].priority(weAreControlling: role == .controlling)
        let controlling = role == .controlling
        func beats(_ pair: CandidatePair) -> Bool {
            pair.priority(weAreControlling: controlling) > floor && !crossesRelay(pair)
        }
        return bestPair { $0.state == .waiting && beats($0) } ?? bestPair { $0.state == .frozen && beats($0) }
    }

    private func startCheck(_ i: Int, now: MediaTime) {
        guard let remote else { return }
        pairs[i].state = .inProgress
        sendCheck(
            local: pairs[i].local, remote: pairs[i].remote, localCredentials: local, remoteCredentials: remote,
            nominate: false, consent: false, now: now)
    }

    private func sendCheck(
        local base: TransportAddress, remote address: TransportAddress,
        localCredentials: ICECredentials, remoteCredentials: ICECredentials, nominate: Bool,
        consent: Bool, now: MediaTime
    ) {
        let preference =
            localCandidates.first(where: { $0.base == base })
            .map { $0.candidate.priority >> 8 & 0xFFFF } ?? 65_535
        var attributes: [STUNAttribute] = [
            .string(STUNAttribute.Kind.username, "\(remoteCredentials.ufrag):\(localCredentials.ufrag)"),
            .uint32(STUNAttribute.Kind.priority, ICECandidate.priority(kind: .prflx, localPreference: preference)),
            role == .controlling
                ? .uint64(STUNAttribute.Kind.iceControlling, tieBreaker)
                : .uint64(STUNAttribute.Kind.iceControlled, tieBreaker)
        ]
        if nominate { attributes.append(.flag(STUNAttribute.Kind.useCandidate)) }
        let request = STUNMessage(method: .binding, messageClass: .request, attributes: attributes)
        let bytes = request.serialize(
            integrityKey: STUNMessage.shortTermKey(password: remoteCredentials.password),
            fingerprint: true)
        transactions[request.transactionID] = Transaction(
            local: base, remote: address, datagram: bytes, rto: initialRTO, due: now + initialRTO,
            nominating: nominate, consent: consent, remotePassword: remoteCredentials.password)
        if !consent { checksSent += 1 }
        outbox.append(Transmit(base: base, destination: address, datagram: bytes))
    }

    private func retransmit(now: MediaTime) {
        for (id, t) in transactions where now >= t.due {
            if t.transmissions >= maximumTransmissions {
                transactions[id] = nil
                if t.nominating { nominating = false }  // the next tick picks the best valid pair again
                if !t.consent, let i = pairIndex(local: t.local, remote: t.remote),
                    pairs[i].state == .inProgress || t.nominating
                {
                    pairs[i].state = .failed
                }
                continue
            }
            var next = t
            next.transmissions += 1
            next.rto = min(t.rto + t.rto, maximumRTO)
            next.due = now + next.rto
            transactions[id] = next
            outbox.append(Transmit(base: t.local, destination: t.remote, datagram: t.datagram))
        }
    }

    /// Regular nomination (§8.1.1): the best valid pair, once no pair still unchecked or in progress could beat
    /// it, or ``nominationDelay`` after the first valid pair; with ``renomination``, later, a valid pair that
    /// beats the selected one.
    private func nominateIfReady(now: MediaTime) {
        guard let due = nominationDue(now: now), now >= due, let best = bestValid() else { return }
        // The pair is valid already: its check goes again, now, with USE-CANDIDATE (outside the pacing).
        nominating = true
        guard let remote else { return }
        sendCheck(
            local: pairs[best].local, remote: pairs[best].remote, localCredentials: local,
            remoteCredentials: remote, nominate: true, consent: false, now: now)
    }

    /// When the controlling side nominates its best valid pair: now when no pair still unchecked or in progress
    /// could beat it, else ``nominationDelay`` after the first valid pair; once a pair is selected, now when
    /// the best valid pair beats it (``renomination``); nil when there is nothing to nominate.
    private func nominationDue(now: MediaTime) -> MediaTime? {
        guard role == .controlling, !nominating, let firstValid, let best = bestValid() else { return nil }
        let bestPriority = pairs[best].priority(weAreControlling: true)
        if let current = selectedPairIndex() {
            guard renomination, !pairs[best].nominated, bestPriority > pairs[current].priority(weAreControlling: true),
                !crossesRelay(pairs[best])
            else { return nil }
            return now
        }
        let contenders = pairs.contains {
            [.frozen, .waiting, .inProgress].contains($0.state) && $0.priority(weAreControlling: true) > bestPriority
        }
        return contenders ? firstValid + nominationDelay : now
    }

    private func bestValid() -> Int? { bestPair { $0.state == .succeeded } }

    /// Whether either side of `pair` is a TURN relay. Renomination moves only to a pair without: a move to another
    /// relayed pair gains little and changes the path under running media.
    private func crossesRelay(_ pair: CandidatePair) -> Bool {
        localCandidates.contains { $0.base == pair.local && $0.candidate.kind == .relay }
            || remoteCandidates.contains { $0.address == pair.remote && $0.kind == .relay }
    }

    private func updateFailure() {
        guard selected == nil, localGatheringComplete, remoteGatheringComplete, remote != nil,
            pairs.allSatisfy({ $0.state == .failed }), transactions.isEmpty, triggered.isEmpty
        else { return }
        state = .failed(.allPairsFailed)
    }

    // MARK: Packets

    /// Handles one STUN datagram that arrived on `base` (a socket's address, or the relayed address for what
    /// came through TURN) from `source`. Replies and triggered checks go to the outbox.
    public func handle(_ datagram: [UInt8], from source: TransportAddress, base: TransportAddress, now: MediaTime) {
        guard let message = try? STUNMessage(parsing: datagram), message.method == .binding else {
            rejectedRequests += 1
            return
        }
        switch message.messageClass {
        case .request: handleRequest(message, from: source, base: base, now: now)
        case .successResponse, .errorResponse: handleResponse(message, from: source, base: base, now: now)
        case .indication: break  // keepalive
        }
    }

    private func handleRequest(
        _ request: STUNMessage, from source: TransportAddress, base: TransportAddress,
        now: MediaTime
    ) {
        let key = STUNMessage.shortTermKey(password: local.password)
        // RFC 8489 §9.1.3: no USERNAME or MESSAGE-INTEGRITY → 400; wrong USERNAME or HMAC → 401.
        guard let username = request.string(STUNAttribute.Kind.username), request.integrityOffset != nil else {
            rejectedRequests += 1
            reply(error: 400, "Bad Request", to: request, from: base, destination: source, key: nil)
            return
        }
        let parts = username.split(separator: ":", maxSplits: 1)
        guard parts.first.map(String.init) == local.ufrag, request.verifyIntegrity(key: key),
            remote == nil || parts.count == 2 && String(parts[1]) == remote?.ufrag
        else {
            rejectedRequests += 1
            reply(error: 401, "Unauthorized", to: request, from: base, destination: source, key: nil)
            return
        }
        // §7.3.1.1: role conflict.
        let theirTieBreaker =
            (try? request.uint64(STUNAttribute.Kind.iceControlling))
            ?? (try? request.uint64(STUNAttribute.Kind.iceControlled)) ?? nil
        if let theirs = theirTieBreaker {
            let theyControl = request.has(STUNAttribute.Kind.iceControlling)
            if theyControl == (role == .controlling) {
                let weWin = role == .controlling ? tieBreaker >= theirs : tieBreaker < theirs
                if weWin {
                    reply(error: 487, "Role Conflict", to: request, from: base, destination: source, key: key)
                    return
                }
                switchRole()
            }
        }
        let response = STUNMessage(
            method: .binding, messageClass: .successResponse, transactionID: request.transactionID,
            attributes: [.address(STUNAttribute.Kind.xorMappedAddress, source, transactionID: request.transactionID)])
        outbox.append(
            Transmit(
                base: base, destination: source,
                datagram: response.serialize(integrityKey: key, fingerprint: true)))
        let priority =
            ((try? request.uint32(STUNAttribute.Kind.priority)) ?? nil) ?? ICECandidate.priority(kind: .prflx)
        let useCandidate = request.has(STUNAttribute.Kind.useCandidate) && role == .controlled
        guard remote != nil else {
            if early.count < maximumPairs { early.append((source, base, priority, useCandidate, now)) }
            return
        }
        handleCheck(from: source, base: base, priority: priority, useCandidate: useCandidate, now: now)
    }

    /// §7.3.1.3–7.3.1.5: learn a peer-reflexive remote candidate, queue a triggered check, note a nomination.
    private func handleCheck(
        from source: TransportAddress, base: TransportAddress, priority: UInt32,
        useCandidate: Bool, now: MediaTime
    ) {
        guard localCandidates.contains(where: { $0.base == base }) else { return }
        if !remoteCandidates.contains(where: { $0.address == source }) {
            let prflx = ICECandidate(
                foundation: "prflx\(remoteCandidates.count)", priority: priority,
                host: source.host, port: source.port, kind: .prflx)
            remoteCandidates.append(prflx)
        }
        var index = pairIndex(local: base, remote: source)
        if index == nil, let candidate = remoteCandidates.first(where: { $0.address == source }),
            let l = localCandidates.firstIndex(where: { $0.base == base && $0.candidate.kind != .srflx })
        {
            addPair(localIndex: l, remote: candidate)
            index = pairIndex(local: base, remote: source)
        }
        guard let i = index else { return }
        switch pairs[i].state {
        case .succeeded:
            if useCandidate { nominate(i, now: now) }
        case .inProgress:
            if useCandidate { pairs[i].nominateOnSuccess = true }
            hurryCheck(on: i)
        case .frozen, .waiting, .failed:
            pairs[i].state = .waiting
            if useCandidate { pairs[i].nominateOnSuccess = true }
            if !triggered.contains(i) { triggered.append(i) }
        }
    }

    /// §7.3.1.4: the peer's check came through on a pair whose own check is still unanswered, so ours may pass
    /// now (the peer's NAT has just opened for us): rather than after the retransmission timer (250 ms and more),
    /// the pending check goes again at once, its timer unchanged (once per transaction, within its
    /// ``maximumTransmissions``). The RFC cancels the transaction for a new triggered check instead, which each of
    /// the peer's retransmissions would start over.
    private func hurryCheck(on i: Int) {
        let pair = pairs[i]
        for (id, t) in transactions
        where !t.consent && !t.hurried && t.local == pair.local && t.remote == pair.remote
            && t.transmissions < maximumTransmissions
        {
            transactions[id]?.hurried = true
            transactions[id]?.transmissions += 1
            outbox.append(Transmit(base: t.local, destination: t.remote, datagram: t.datagram))
        }
    }

    private func handleResponse(
        _ response: STUNMessage, from source: TransportAddress, base: TransportAddress,
        now: MediaTime
    ) {
        guard let t = transactions[response.transactionID] else { return }  // late retransmission's answer
        guard response.verifyIntegrity(key: STUNMessage.shortTermKey(password: t.remotePassword)) else {
            rejectedRequests += 1
            return
        }
        transactions[response.transactionID] = nil
        if t.nominating { nominating = false }  // answered either way: the next tick may nominate again
        if t.consent {
            if response.messageClass == .successResponse, selected?.remote == t.remote { lastConsent = now }
            return
        }
        guard let i = pairIndex(local: t.local, remote: t.remote) else { return }
        if response.messageClass == .errorResponse {
            if (try? response.errorCode())??.code == 487 {
                switchRole()  // §7.2.5.1: switch and check this pair again
                pairs[i].state = .waiting
                triggered.insert(i, at: 0)
            } else {
                pairs[i].state = .failed
            }
            return
        }
        // §7.2.5.2.1: the response must come back on the path the request took (symmetric addresses).
        guard source == t.remote, base == t.local else {
            pairs[i].state = .failed
            return
        }
        pairs[i].state = .succeeded
        if firstValid == nil { firstValid = now }
        // §7.2.5.3.3: unfreeze the pairs that share this foundation.
        for j in pairs.indices where pairs[j].state == .frozen && pairs[j].foundation == pairs[i].foundation {
            pairs[j].state = .waiting
        }
        if t.nominating && role == .controlling || pairs[i].nominateOnSuccess && role == .controlled {
            nominate(i, now: now)
        }
    }

    private func nominate(_ i: Int, now: MediaTime) {
        guard let remote else { return }
        pairs[i].nominated = true
        let controlling = role == .controlling
        guard
            let best = pairs.indices.filter({ pairs[$0].nominated })
                .max(by: {
                    pairs[$0].priority(weAreControlling: controlling)
                        < pairs[$1].priority(weAreControlling: controlling)
                })
        else { return }
        let pair = pairs[best]
        let newSelection = Selected(
            local: pair.local, remote: pair.remote, localCredentials: local,
            remoteCredentials: remote)
        if selected != newSelection {
            selected = newSelection
            // The pair has just passed a check: consent runs from now (RFC 7675 §5.1).
            lastConsent = now
            nextConsent = now + consentInterval * Double.random(in: 0.8...1.2)
        }
        state = .connected
        checklistCompleted = true
    }

    private func switchRole() {
        role = role == .controlling ? .controlled : .controlling
        roleSwitches += 1
        nominating = false
    }

    private func reply(
        error code: Int, _ reason: String, to request: STUNMessage, from base: TransportAddress,
        destination: TransportAddress, key: [UInt8]?
    ) {
        let message = STUNMessage(
            method: .binding, messageClass: .errorResponse, transactionID: request.transactionID,
            attributes: [.errorCode(code, reason: reason)])
        outbox.append(
            Transmit(
                base: base, destination: destination,
                datagram: message.serialize(integrityKey: key, fingerprint: true)))
    }

    // MARK: Checklist

    private func pairIndex(local: TransportAddress, remote: TransportAddress) -> Int? {
        pairs.firstIndex { $0.local == local && $0.remote == remote }
    }

    /// §6.1.2.2: same family; §6.1.2.4: no duplicate (base, remote); §6.1.2.5: at most ``maximumPairs``;
    /// §6.1.2.6: the first pair of a foundation waits, the rest are frozen.
    private func addPair(localIndex: Int, remote candidate: ICECandidate) {
        let l = localCandidates[localIndex]
        guard let address = candidate.address, address.family == l.base.family,
            pairIndex(local: l.base, remote: address) == nil
        else { return }
        let foundation = "\(l.candidate.foundation)|\(candidate.foundation)"
        var pair = CandidatePair(
            local: l.base, remote: address, localPriority: l.candidate.priority,
            remotePriority: candidate.priority, foundation: foundation)
        if !pairs.contains(where: { $0.foundation == foundation }) { pair.state = .waiting }
        if pairs.count >= maximumPairs {
            // Drop the lowest-priority pair that is not being used, if the new one beats it.
            let controlling = role == .controlling
            guard
                let worst = pairs.indices.filter({ [.frozen, .waiting, .failed].contains(pairs[$0].state) })
                    .min(by: {
                        pairs[$0].priority(weAreControlling: controlling)
                            < pairs[$1].priority(weAreControlling: controlling)
                    }),
                pairs[worst].priority(weAreControlling: controlling) < pair.priority(weAreControlling: controlling)
            else { return }
            pairs[worst] = pair
            triggered.removeAll { $0 == worst }
            return
        }
        pairs.append(pair)
    }
}

extension MediaTime {
    static func * (a: MediaTime, b: Double) -> MediaTime { MediaTime(nanoseconds: Int64(Double(a.nanoseconds) * b)) }
}
