// VoiceNetSim: a deterministic network simulator in fast time.
