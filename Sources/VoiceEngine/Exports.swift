// The engine's public surface: one import gives a calling client every public module.
@_exported import VoiceCore
@_exported import VoiceCodec
@_exported import VoiceDSP
@_exported import VoiceRTP
@_exported import VoiceSRTP
@_exported import VoiceDevices
@_exported import VoiceJitter
@_exported import VoiceSession
@_exported import VoiceSDP
