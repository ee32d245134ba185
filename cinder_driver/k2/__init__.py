"""Cinder drivers for K2-class all-flash arrays (K2 REST API v2)."""
