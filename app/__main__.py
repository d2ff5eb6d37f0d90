import sys

from tilestudio.launcher import main

sys.exit(main())
