// VoiceCodec
