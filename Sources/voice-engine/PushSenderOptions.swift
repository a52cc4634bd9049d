import ArgumentParser
import Foundation
import NIOCore
import VoicePush
import VoiceService

/// The registration service's managed push: the APNs and FCM senders and the secret Kamailio's push requests
/// carry (`POST /v1/managed-push?to=<user>`, `Authorization: Bearer <secret>`). Without `--managed-push-secret-file`
/// the service sends no pushes.
struct PushSenderOptions: ParsableArguments {
    @Option(
        name: .customLong("managed-push-secret-file"),
        help: "File holding the secret the SIP service sends with its push requests (enables managed push).")
    var secretFile: String?
    @Option(name: .customLong("apns-key-file"), help: "APNs token-authentication key (.p8, PKCS#8 P-256 PEM).")
    var apnsKeyFile: String?
    @Option(name: .customLong("apns-key-id"), help: "The .p8 key's ID (the provider token's kid).")
    var apnsKeyID: String?
    @Option(name: .customLong("apns-team-id"), help: "The developer team ID (the provider token's iss).")
    var apnsTeamID: String?
    @Option(name: .customLong("apns-bundle-id"), help: "The app's bundle ID; VoIP pushes go to <bundle ID>.voip.")
    var apnsBundleID: String?
    @Option(
        name: .customLong("apns-endpoint"),
        help: "APNs server (https://api.sandbox.push.apple.com for development builds).")
    var apnsEndpoint = "https://api.push.apple.com"
    @Option(name: .customLong("fcm-service-account"), help: "FCM service account key file (JSON, from Google).")
    var fcmServiceAccount: String?
    @Option(name: .customLong("fcm-endpoint"), help: "FCM HTTP v1 server.")
    var fcmEndpoint = "https://fcm.googleapis.com"
    @Option(
        name: .customLong("fcm-token-endpoint"),
        help: "OAuth2 token endpoint the grant is exchanged at (default: the service account's token_uri).")
    var fcmTokenEndpoint: String?
    @Option(
        name: .customLong("push-trust-roots"),
        help: "PEM file of the CAs the push services' certificates must chain to (default: the system's).")
    var trustRoots: String?

    func validate() throws {
        let apns = [apnsKeyFile, apnsKeyID, apnsTeamID, apnsBundleID]
        guard apns.allSatisfy({ $0 == nil }) || apns.allSatisfy({ $0 != nil }) else {
            throw ValidationError("APNs needs --apns-key-file, --apns-key-id, --apns-team-id and --apns-bundle-id")
        }
        if secretFile == nil, apnsKeyFile != nil || fcmServiceAccount != nil {
            throw ValidationError("push senders need --managed-push-secret-file (the SIP service's push requests)")
        }
        for url in [apnsEndpoint, fcmEndpoint] + (fcmTokenEndpoint.map { [$0] } ?? []) {
            do { _ = try PushEndpoint(url) } catch { throw ValidationError("\(error)") }
        }
    }

    /// The managed push of the service (nil when not asked for) and the lines the command prints at start: which
    /// push platform is on, which is off and why, so an operator sees at once whether phones will be pushed.
    func managedPush(store: RegistrationStore, group: any EventLoopGroup) throws -> (
        push: RegistrationService.ManagedPush?, summary: [String]
    ) {
        guard let secretFile else {
            return (nil, ["push: off (no --managed-push-secret-file: apps push their devices themselves)"])
        }
        let secret = String(decoding: try readServiceFile(secretFile), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw CommandFailure.dataError("\(secretFile): the managed push secret is empty") }
        var summary: [String] = []
        do {
            var apns: APNsSender?
            if let apnsKeyFile, let apnsKeyID, let apnsTeamID, let apnsBundleID {
                apns = try APNsSender(
                    .init(
                        teamID: apnsTeamID, keyID: apnsKeyID,
                        privateKeyPEM: String(decoding: try readServiceFile(apnsKeyFile), as: UTF8.self),
                        bundleID: apnsBundleID, endpoint: try PushEndpoint(apnsEndpoint), trustRootsFile: trustRoots),
                    group: group)
                summary.append(
                    "push: APNs on (topic \(apnsBundleID).voip, team \(apnsTeamID), key \(apnsKeyID), \(apnsEndpoint))")
            } else {
                summary.append("push: APNs off (no --apns-key-file, --apns-key-id, --apns-team-id, --apns-bundle-id)")
            }
            var fcm: FCMSender?
            if let fcmServiceAccount {
                let account = try JSONDecoder().decode(
                    FCMSender.ServiceAccount.self, from: try readServiceFile(fcmServiceAccount))
                fcm = try FCMSender(
                    .init(
                        serviceAccount: account, endpoint: try PushEndpoint(fcmEndpoint),
                        tokenEndpoint: try fcmTokenEndpoint.map { try PushEndpoint($0) }, trustRootsFile: trustRoots),
                    group: group)
                summary.append("push: FCM on (project \(account.projectID), \(fcmEndpoint))")
            } else {
                summary.append("push: FCM off (no --fcm-service-account)")
            }
            let push = RegistrationService.ManagedPush(
                dispatcher: ManagedPushDispatcher(store: store, apns: apns, fcm: fcm), secret: secret)
            return (push, summary)
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure.dataError("cannot set up the push senders: \(error)")
        }
    }
}
