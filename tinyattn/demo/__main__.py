"""``python -m tinyattn.demo`` (also ``python -m tinyattn demo``): train the demo model."""

import sys

from . import main

sys.exit(main())
