

team