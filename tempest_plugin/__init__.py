"""Tempest plugin of cinder-flash."""
