"""Turning sound into speech segments: sources (microphone, file, stdin) and voice activity detection."""
