// VoiceDSP
