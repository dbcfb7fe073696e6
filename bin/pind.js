#!/usr/bin/env node
// Runs pind from the esbuild bundle (`npm run bundle`) without packaging a binary.
import '../dist/pind.cjs'
