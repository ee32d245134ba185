# Load Cinder's test package before anything imports ssl: it applies
# Cinder's eventlet monkey patching and registers Cinder's versioned
# objects, as cinder-volume does at start-up before it loads a driver.
import cinder.tests.unit  # noqa: F401
