// VoiceJitter: the adaptive jitter buffer.
