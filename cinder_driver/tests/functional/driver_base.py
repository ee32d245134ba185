"""What every driver test case against a live reference array shares."""

from cinder.tests.unit import test

from cinder_driver.tests import objects


class DriverTestCase(test.TestCase):

    def requests(self):
        """'METHOD path' lines of the array's request log so far."""
        raise NotImplementedError()

    def volume_type(self, **specs):
        return objects.volume_type(self.ctx, **specs)

    def volume(self, size=1, vtype=None, **updates):
        return objects.volume(self.ctx, size, vtype, **updates)

    def create(self, size=1, vtype=None, **kwargs):
        vol = self.volume(size, vtype, **kwargs)
        vol.update(self.driver.create_volume(vol) or {})
        return vol

    def snapshot(self, vol):
        snap = objects.snapshot(self.ctx, vol)
        snap.update(self.driver.create_snapshot(snap) or {})
        return snap

    def count(self, fn, *args):
        """(result, requests the call sent to the array)."""
        before = len(self.requests())
        result = fn(*args)
        return result, self.requests()[before:]
