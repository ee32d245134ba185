"""The array's block target: iSCSI (``iscsi``) over SCSI command sets
(``scsi``) over the devices ``exports`` resolves per initiator."""
