// VoiceDevices: audio capture and playout devices (ALSA, file-backed, null).
