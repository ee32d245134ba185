"""K2 references: ``{"ref": "/<resource>/<id>"}``, built and read here."""


def path(resource, obj_id):
    return '/%s/%d' % (resource, obj_id)


def ref(resource, obj_id):
    return {'ref': path(resource, obj_id)}


def to(resource, obj):
    """The reference to a stored object."""
    return ref(resource, obj['id'])


def parse(value):
    """(resource, id) of a reference."""
    resource, obj_id = value['ref'][1:].rsplit('/', 1)
    return resource, int(obj_id)


def id_of(value):
    return int(value['ref'].rsplit('/', 1)[1])
