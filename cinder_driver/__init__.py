"""Cinder volume drivers for K2-class all-flash arrays and LINSTOR."""
