import sys

from tools.migrate import main

sys.exit(main())
