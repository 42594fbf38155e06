import './visual.css';
import './base.css';
