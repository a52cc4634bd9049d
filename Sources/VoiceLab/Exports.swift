// The lab's surface: the simulator it drives is part of what a tool or test that imports VoiceLab uses.
@_exported import VoiceNetSim
