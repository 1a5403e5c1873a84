"""Test bed: tiny local models (models.py) and a real-engine runner (engine.py) for tests."""
