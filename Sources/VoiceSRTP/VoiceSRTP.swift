// VoiceSRTP
