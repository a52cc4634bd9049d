/// The page `voice-engine webrtc-demo` and the Chromium interoperability test serve: it opens a WebSocket to the
/// server that served it, sends its offer (after ICE gathering, no trickle), applies the engine's answer, plays
/// what the engine sends, and reports its `getStats()` inbound audio (packets, energy, concealment) every 500 ms
/// so a test can check what the browser received. `?autocall` calls at load (headless use); `?engineOffers` makes
/// the engine the offerer (the page sends "ready", answers the engine's offer); `?turn=HOST:PORT&user=U&pass=P`
/// sends everything through that TURN server (`iceTransportPolicy: "relay"`: relayed candidates only);
/// `?raw` turns the browser's microphone processing off; `?trickle` sends the offer at once instead of after ICE
/// gathering and then each of the browser's candidates as `{"type":"candidate","candidate":"candidate:…"}` (an
/// empty `candidate` is end-of-candidates; an ICE-lite engine ignores them, it learns the browser's addresses from
/// its checks). The engine's candidates may arrive the same way (trickle ICE, RFC 8838/8840): the page gives each
/// to `addIceCandidate` once the remote description is set, and reports `{"type":"candidate-added"}` (or an error).
public enum WebRTCDemoPage {
    public static let html = #"""
        <!doctype html>
        <html>
        <head><meta charset="utf-8"><title>VoiceEngine — WebRTC call</title></head>
        <body>
        <h1>VoiceEngine WebRTC call</h1>
        <p>Calls the engine that served this page: your microphone goes to the engine, the engine's audio plays here.</p>
        <button id="call">Call the engine</button>
        <pre id="log"></pre>
        <audio id="remote" autoplay></audio>
        <script>
        "use strict";
        const log = (m) => { document.getElementById("log").textContent += m + "\n"; };
        async function gathered(pc) {
          await new Promise((resolve) => {
            if (pc.iceGatheringState === "complete") resolve();
            pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") resolve(); };
            setTimeout(resolve, 2000);
          });
        }
        // Time from createOffer() to the first decoded audio from the peer (inbound-rtp totalSamplesReceived > 0),
        // polled every 5 ms; ICE gathering (up to 2 s without trickle) is inside it and reported apart.
        async function firstAudio(pc, since, send) {
          const gatheredAt = performance.now();
          for (;;) {
            let samples = 0;
            (await pc.getStats()).forEach((s) => { if (s.type === "inbound-rtp" && s.kind === "audio") samples = s.totalSamplesReceived || 0; });
            if (samples > 0) break;
            await new Promise((r) => setTimeout(r, 5));
          }
          send({type: "timing", offerToFirstAudioMs: performance.now() - since, gatheringMs: gatheredAt - since});
        }
        async function call() {
          const engineOffers = new URLSearchParams(location.search).has("engineOffers");
          const ws = new WebSocket(`ws://${location.host}/ws`);
          await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
          const send = (o) => ws.send(JSON.stringify(o));
          window.onerror = (m) => send({type: "error", message: String(m)});
          const query = new URLSearchParams(location.search);
          // ?raw: the microphone without the browser's echo canceller, noise suppressor and gain control (tests that
          // compare what arrives with the file played want the signal untouched).
          const raw = query.has("raw");
          const stream = await navigator.mediaDevices.getUserMedia({audio: raw
            ? {echoCancellation: false, noiseSuppression: false, autoGainControl: false} : true});
          const pc = new RTCPeerConnection(query.has("turn") ? {
            iceServers: [{urls: "turn:" + query.get("turn") + "?transport=udp", username: query.get("user"), credential: query.get("pass")}],
            iceTransportPolicy: "relay"} : {});
          stream.getTracks().forEach((t) => pc.addTrack(t, stream));
          pc.ontrack = (e) => { document.getElementById("remote").srcObject = e.streams[0] || new MediaStream([e.track]); };
          pc.onconnectionstatechange = () => { log("connection " + pc.connectionState); send({type: "state", state: pc.connectionState}); };
          if (query.has("trickle")) {
            pc.onicecandidate = (e) => send({type: "candidate", candidate: e.candidate ? e.candidate.candidate : ""});
          }
          // The engine's trickled candidates (an empty one is end-of-candidates), applied in order once the remote
          // description is set (addIceCandidate refuses them before): a promise chain that starts when it is.
          let remoteDescriptionSet;
          let candidates = new Promise((resolve) => { remoteDescriptionSet = resolve; });
          const addRemote = async (c) => {
            try {
              await pc.addIceCandidate({candidate: c, sdpMLineIndex: 0});
              log("remote candidate " + (c || "end-of-candidates"));
              send({type: "candidate-added", candidate: c});
            } catch (e) { send({type: "error", message: "addIceCandidate(" + c + "): " + e}); }
          };
          ws.onmessage = async (m) => {
            const msg = JSON.parse(m.data);
            try {
              if (msg.type === "candidate") {
                candidates = candidates.then(() => addRemote(msg.candidate));
              } else if (msg.type === "answer") {
                await pc.setRemoteDescription({type: "answer", sdp: msg.sdp});
                remoteDescriptionSet();
                log("answer applied");
              } else if (msg.type === "offer") {
                await pc.setRemoteDescription({type: "offer", sdp: msg.sdp});
                remoteDescriptionSet();
                await pc.setLocalDescription(await pc.createAnswer());
                await gathered(pc);
                send({type: "answer", sdp: pc.localDescription.sdp});
                log("answered the engine's offer");
              }
            } catch (e) { log("refused: " + e); send({type: "error", message: msg.type + ": " + e}); }
          };
          if (engineOffers) {
            send({type: "ready"});
          } else {
            const offerStarted = performance.now();
            await pc.setLocalDescription(await pc.createOffer());
            if (!query.has("trickle")) await gathered(pc);
            send({type: "offer", sdp: pc.localDescription.sdp});
            firstAudio(pc, offerStarted, send);
          }
          setInterval(async () => {
            (await pc.getStats()).forEach((s) => {
              if (s.type === "inbound-rtp" && s.kind === "audio") {
                send({type: "stats", packetsReceived: s.packetsReceived, packetsLost: s.packetsLost,
                      totalAudioEnergy: s.totalAudioEnergy, totalSamplesDuration: s.totalSamplesDuration,
                      totalSamplesReceived: s.totalSamplesReceived, concealedSamples: s.concealedSamples});
              }
            });
          }, 500);
        }
        document.getElementById("call").onclick = () => call().catch((e) => log("error " + e));
        if (new URLSearchParams(location.search).has("autocall")) call().catch((e) => log("error " + e));
        </script>
        </body>
        </html>
        """#
}
