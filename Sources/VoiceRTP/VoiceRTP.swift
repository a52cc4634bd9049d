// VoiceRTP
