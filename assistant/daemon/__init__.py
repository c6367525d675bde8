"""The always-on service: one process owns the audio, the models and the database, and serves a local API."""
