import VoiceCore
