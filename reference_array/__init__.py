"""The embedded reference array: a storage engine behind K2 and LINSTOR
REST dialects, exported over iSCSI."""
