import sys

from ducklake_jobs.__main__ import main

sys.exit(main())
