// An app imports VoiceClient only: the engine's public modules (audio session, devices, call statistics) come
// with it; SIP stays behind the client.
@_exported import VoiceEngine
