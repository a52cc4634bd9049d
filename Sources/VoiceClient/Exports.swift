// An app imports VoiceClient only: the engine's public modules (audio session, devices, call statistics) and the
// registration wire types come with it; SIP stays behind the client.
@_exported import VoiceClientWire
@_exported import VoiceEngine
