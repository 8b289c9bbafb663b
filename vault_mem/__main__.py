from vault_mem.cli import main

raise SystemExit(main())
