"""A module whose import starts a thread, as some libraries' imports do: a process that imported
it is no longer safe to fork workers from (tests of the compile server)."""

import threading
import time

threading.Thread(target=time.sleep, args=(3600,), daemon=True, name="thread-import").start()
