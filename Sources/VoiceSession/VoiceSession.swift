// VoiceSession: the audio-session state machine and the audio controller.
