"""From speech segments to attributed text: transcription and speaker diarization."""
