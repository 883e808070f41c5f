#!/usr/bin/env node
import { VERSION } from './index.ts';

console.log(VERSION);
