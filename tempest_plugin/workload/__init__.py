"""The MongoDB workload of the K2 reference architecture, as a library.

``dataset`` makes the documents, ``driver`` loads them and runs the update
benchmark against any MongoDB-protocol server, ``topology`` holds the
commands that form each topology on instances, and ``report`` prints the
results table and refuses nonsensical measurements. The Tempest scenarios
and ``tox -e mongo-local`` use the same code.
"""
